"""Whether a cell's figure may decide anything: the one rule, for the verdicts,
a server's capacity, the charts and ``serverbench compare``.

A cell is comparable when it was measured (status ``ok``, or ``partial``: some
repeats ok), at least two of its repeats succeeded (one has no spread), and
none of them carries a flag from ``comparisons.not_comparable_flags``. The
reasons against it are ``Reason`` values (a code a program tests, the words a
reader gets); none means it is comparable.
"""

from __future__ import annotations

from collections.abc import Iterable

from serverbench.decide.judgement import Reason
from serverbench.record import flags as flagging
from serverbench.record.model import CellRecord, cell_status
from serverbench.record.vocabulary import Status

MEASURED = ("ok", "partial")
MIN_REPEATS = 2


TOO_FEW_REPEATS = "too few repeats"


def reasons_not_comparable(row, excluded: Iterable[str], starved_connections: int | None = None) -> list[Reason]:
    """Why a cell (a row of summary.csv, or ``cell_of_records``) may decide nothing: it failed or
    was skipped (code: its status), has fewer than 2 good repeats (``TOO_FEW_REPEATS``), or
    carries a flag from ``excluded`` (code: the flag)."""
    reasons = []
    if row["status"] not in MEASURED:
        reasons.append(Reason(row["status"], f"{row['status']}: {row['reason']}"))
    elif row["repeats_ok"] < MIN_REPEATS:
        reasons.append(Reason(TOO_FEW_REPEATS, f"only {row['repeats_ok']} successful repeat"))
    for flag in sorted(flagging.parsed(row["flags"]) & set(excluded)):
        if flag == "starved" and starved_connections is not None:
            text = f"starved: {starved_connections} of {row['concurrency']} connections got (almost) no answer"
            reasons.append(Reason(flag, text))
        else:
            reasons.append(Reason(flag, flag))
    return reasons


def why_not_comparable(row, excluded: Iterable[str], starved_connections: int | None = None) -> list[str]:
    """``reasons_not_comparable`` in words: none means the cell is comparable."""
    return [reason.text for reason in reasons_not_comparable(row, excluded, starved_connections)]


def comparable(row, excluded: Iterable[str]) -> bool:
    return not why_not_comparable(row, excluded)


def cell_of_records(records: list[CellRecord]) -> dict:
    """A cell's repeats (records) in the shape of its summary row, as far as comparability reads it."""
    ok = [record for record in records if record.status == Status.OK]
    reasons = sorted({record.reason for record in records if record.reason})
    return {
        "status": cell_status(record.status for record in records) if records else "failed",
        "reason": " | ".join(reasons) if reasons else "no repeat",
        "repeats_ok": len(ok),
        "flags": flagging.joined(sorted({flag for record in ok for flag in record.flags})),
        "concurrency": records[0].cell.concurrency if records else None,
    }
