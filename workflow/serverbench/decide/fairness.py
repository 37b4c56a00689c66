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
from serverbench.decide.judgement import FAIRNESS as FAIRNESS_METRIC
from serverbench.decide.judgement import Reason, TimedComparison, Users
from serverbench.decide.pairs import FAIRNESS
from serverbench.decide.pending import Pending
from serverbench.record.vocabulary import Outcome

KIND = FAIRNESS
DEFAULT_MARGIN = 0.05
WORDS = {inference.FASTER: Outcome.FAIRER, inference.SLOWER: Outcome.LESS_FAIR}
STARVED = "starved"
# Waiting connections that time out are part of what starvation does to a user: not a reason
# to leave the comparison out, where a side is starved.
WITH_STARVATION = ("errors", "timeouts")
COMPARED_INSTEAD = "compared on fairness"  # a Reason's code: req/s could not compare the pair


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
    pair = TimedComparison.of_pair(
        KIND,
        FAIRNESS_METRIC,
        condition,
        a,
        b,
        n_a=len(a.jain),
        n_b=len(b.jain),
        a_value=float(a.jain.median()),
        b_value=float(b.jain.median()),
        method=found.method,
        estimate=found.ratio,
        p_value=found.p_value,
        reasons=(Reason(COMPARED_INSTEAD, f"compared as {kind}: {words}"),),
        users=(_users(a.users), _users(b.users)),
    )
    return [Pending(pair, estimate=found)]


def _users(found: dict) -> Users:
    return Users(found.get("answered_share"), found.get("connection_wait_p90_ms"))


def in_words(found: TimedComparison) -> str:
    """A fairness comparison's sentence, with what each side's users got."""
    where = f"Under {dict(found.condition)['tool']} at {dict(found.condition)['concurrency']} connections"
    if found.low is None:
        return f"{where}, {found.a} against {found.b}: fairness {found.outcome}"
    level = f"{(1 - found.level) * 100:.3g}%"
    interval = f"{level} CI {found.low:.2f}–{found.high:.2f}"
    detail = f"Jain's index {found.a_value:.2f} against {found.b_value:.2f}"
    if found.outcome == Outcome.EQUIVALENT:
        outcome = f"equivalent (within ±{found.margin * 100:.3g}%)"
    elif found.outcome == Outcome.UNDETERMINED and found.detectable_ratio:
        outcome = f"undetermined (this run could have told beyond {found.detectable_ratio:.2f}×)"
    else:
        outcome = f"{found.outcome} by more than {found.margin * 100:.3g}%"
    return (
        f"{where}, {found.a} serves its connections {found.estimate:.2f}× as evenly as {found.b}"
        f" ({detail}; {interval}): {outcome}{_what_users_got(found.users or (Users(), Users()))}"
    )


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2g}"


def _what_users_got(users: tuple[Users, Users]) -> str:
    """The connections answered at all, and the p90 over all of them of the time between answers."""
    a, b = users
    parts = []
    if pd.notna(a.answered_share) and pd.notna(b.answered_share):
        parts.append(f"{a.answered_share:.0%} against {b.answered_share:.0%} of connections answered")
    if pd.notna(a.connection_wait_p90_ms) and pd.notna(b.connection_wait_p90_ms):
        parts.append(
            f"the slowest-served tenth waited {_ms(a.connection_wait_p90_ms)} against"
            f" {_ms(b.connection_wait_p90_ms)} ms between answers (a starved connection counts its whole window)"
        )
    return f"; {'; '.join(parts)}" if parts else ""
