"""Starvation as a comparison: where connections wait (a cell flagged ``starved``),
two servers' req/s say little about what a user gets, so they are compared on
how evenly their connections were served instead.

The measure is Jain's fairness index over each connection's answers in a
repeat, (Σx)²/(n·Σx²): 1 when every connection got as much, 1/n when one got
everything (runs.csv ``fairness_jain``). Its ratio A/B is estimated like req/s
(rounds model, Holm's level) and read against ``comparisons.fairness_margin``
(default ±5%): *fairer*, *less fair*, *equivalent* or *undetermined*. The
share of connections answered at all sits beside it in the sentence.
"""

from __future__ import annotations

import pandas as pd

from serverbench.decide import inference
from serverbench.decide.judgement import Pending
from serverbench.decide.pairs import FAIRNESS

KIND = FAIRNESS
DEFAULT_MARGIN = 0.05
WORDS = {inference.FASTER: "fairer", inference.SLOWER: "less fair"}
STARVED = "starved"
# Waiting connections that time out are part of what starvation does to a user: not a reason
# to leave the comparison out, where a side is starved.
WITH_STARVATION = ("errors", "timeouts")


def fairness_pair(kind: str, condition: tuple, a, b) -> list[Pending]:
    """A fairness comparison for a pair kept apart only by starvation (``a``, ``b``:
    ``verdicts.CellRounds``), else none."""
    reasons = [reason for cell in (a, b) for reason in cell.why_not]
    starved = [reason for reason in reasons if reason.code == STARVED]
    if not starved or any(reason.code not in (STARVED, *WITH_STARVATION) for reason in reasons):
        return []
    if a.jain is None or b.jain is None or len(a.jain) < 2 or len(b.jain) < 2:
        return []
    found = inference.estimate(a.jain, b.jain)
    if found is None:
        return []
    words = "; ".join(reason.text for reason in reasons)
    row = dict(zip(("profile", "workload", "tool", "concurrency"), condition, strict=True))
    row.update(
        kind=KIND,
        a=a.server,
        b=b.server,
        language_a=a.language,
        language_b=b.language,
        n_a=len(a.jain),
        n_b=len(b.jain),
        median_a=float(a.jain.median()),
        median_b=float(b.jain.median()),
        method=found.method,
        ratio=found.ratio,
        p_value=found.p_value,
        why=f"compared as {kind}: {words}",
    )
    return [Pending(row, estimate=found, users=(a.users, b.users))]


def in_words(row: dict, users: tuple[dict, dict]) -> None:
    """The outcome in fairness words, and the row's sentence (``users``: what each side's got)."""
    row["verdict"] = WORDS.get(row.get("verdict"), row.get("verdict"))
    where = f"Under {row['tool']} at {row['concurrency']} connections"
    if row.get("ci_low") is None:
        row["sentence"] = f"{where}, {row['a']} against {row['b']}: fairness {row['verdict']}"
        return
    level = f"{(1 - row['level']) * 100:.3g}%"
    interval = f"{level} CI {row['ci_low']:.2f}–{row['ci_high']:.2f}"
    detail = f"Jain's index {row['median_a']:.2f} against {row['median_b']:.2f}"
    if row["verdict"] == "equivalent":
        outcome = f"equivalent (within ±{row['margin'] * 100:.3g}%)"
    elif row["verdict"] == "undetermined" and row.get("detectable_ratio"):
        outcome = f"undetermined (this run could have told beyond {row['detectable_ratio']:.2f}×)"
    else:
        outcome = f"{row['verdict']} by more than {row['margin'] * 100:.3g}%"
    row["sentence"] = (
        f"{where}, {row['a']} serves its connections {row['ratio']:.2f}× as evenly as {row['b']}"
        f" ({detail}; {interval}): {outcome}{_what_users_got(users)}"
    )


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2g}"


def _what_users_got(users: tuple[dict, dict]) -> str:
    """The connections answered at all, and the p90 over all of them of the time between answers."""
    a, b = users
    parts = []
    if pd.notna(a.get("answered_share")) and pd.notna(b.get("answered_share")):
        parts.append(f"{a['answered_share']:.0%} against {b['answered_share']:.0%} of connections answered")
    if pd.notna(a.get("connection_wait_p90_ms")) and pd.notna(b.get("connection_wait_p90_ms")):
        parts.append(
            f"the slowest-served tenth waited {_ms(a['connection_wait_p90_ms'])} against"
            f" {_ms(b['connection_wait_p90_ms'])} ms between answers (a starved connection counts its whole window)"
        )
    return f"; {'; '.join(parts)}" if parts else ""
