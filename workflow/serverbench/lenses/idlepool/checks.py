"""What the idle-pool lens offers to releases and bisect (``Lens.checks``), idle_pool_checks.csv:
a row per (profile, server, check) in the ``lens.Layout.ROW`` layout, both read from the server
bare at its own keep-alive, at the *check's idle time*: the longest idle time swept below the
keep-alive its catalogue entry declares (0.9 × it by default), what a balancer set just under
that keep-alive meets. A server's releases share its entry, so all are swept at the same idle
times, and a release whose own default is shorter than the one declared (gunicorn's keep-alive
moved from 2 s to 5 s) has its connections closed there:

- ``failed_reuses``: the share of the reuses made that failed (reset, closed before the answer,
  timed out, a bad status: a 502 at the balancer); a release is judged on it against its
  baseline and the release before it (idle_pool_verdicts.csv, kinds ``release`` and ``release
  step``: ``decide.release_comparisons``), by the same rule and margin as the idle times;
- ``answered_reuses``: the share answered; shown, not judged: one the server closed before the
  send is not answered yet not failed (the balancer retries it), so a shorter keep-alive shows
  here where the timer, not the race, closed the connections.

A server with no such row (not swept, or no idle time below its keep-alive) is a row with its
status and reason, never a missing row.
"""

from __future__ import annotations

import pandas as pd

from serverbench.lenses.idlepool.pool import FAILED, Reuse
from serverbench.lenses.idlepool.sweep import DEFAULT, REUSE_COLUMNS
from serverbench.record.vocabulary import Status

FAILED_CHECK, ANSWERED_CHECK = "failed_reuses", "answered_reuses"
CHECK_UNITS = {FAILED_CHECK: "share of reuses failed", ANSWERED_CHECK: "share of reuses answered"}
CHECK_COLUMNS = [
    "profile",
    "server",
    "language",
    "check",
    "idle_s",
    "value",
    "unit",
    "ci_low",
    "ci_high",
    "n",
    "status",
    "reason",
]
NO_IDLE_BELOW = "no idle time swept below its keep-alive"


def offered_row(record: dict) -> dict | None:
    """The record's sweep row at the check's idle time (None: none swept)."""
    own = [
        row
        for row in record["sweeps"]
        if row["deployment"] == record["server"] and row["keepalive"] == DEFAULT and row["idle_s"] < row["keepalive_s"]
    ]
    return max(own, key=lambda row: row["idle_s"]) if own else None


def made(row: dict) -> int:
    """The reuses made at one idle time (a connection the server would not keep is none)."""
    return sum(int(row[column]) for column in REUSE_COLUMNS if column != str(Reuse.NOT_KEPT))


def figures(row) -> list[float]:
    """One idle time's reuses (a sweep's row), 1 where it failed, 0 where it did not (a reuse
    never made: none): the figures every judgement of the lens reads."""
    failed = sum(int(row[str(outcome)]) for outcome in FAILED)
    return [1.0] * failed + [0.0] * (made(row) - failed)


def _row(record: dict, check: str, **figures) -> dict:
    keys = {key: record[key] for key in ("profile", "server", "language")}
    return {**keys, "check": check, "unit": CHECK_UNITS[check], "ci_low": None, "ci_high": None, **figures}


def check_rows(record: dict) -> list[dict]:
    """One server's two checks at the check's idle time."""
    row = offered_row(record) if record["status"] == Status.OK else None
    if row is None or not made(row):
        status = record["status"] if record["status"] != Status.OK else Status.NOT_MEASURED
        why = record["reason"] if record["status"] != Status.OK else NO_IDLE_BELOW
        if row is not None:
            why = f"no connection kept at idle {row['idle_s']:g} s"
        return [_row(record, check, idle_s=None, value=None, n=0, status=status, reason=why) for check in CHECK_UNITS]
    n = made(row)
    shares = {FAILED_CHECK: sum(figures(row)) / n, ANSWERED_CHECK: int(row[str(Reuse.ANSWERED)]) / n}
    return [
        _row(record, check, idle_s=row["idle_s"], value=round(share, 4), n=n, status=Status.OK, reason=None)
        for check, share in shares.items()
    ]


def check_table(records: list[dict]) -> pd.DataFrame:
    """idle_pool_checks.csv from the servers' records."""
    return pd.DataFrame([row for record in records for row in check_rows(record)], columns=CHECK_COLUMNS)
