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
