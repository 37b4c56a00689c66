"""The one rule for whether a conformance check met the requirement it rests on.

A check rests on an RFC's MUST, SHOULD or MAY (``requirement``); its outcome
is pass, warn, fail or info. The requirement is met when the outcome is pass or
info and broken otherwise: a request a MUST says to reject with a 400, closed
without a word, is safe but *warn*, and the MUST is broken (the 400 was owed).
The probes set ``met`` with this rule; conformance.csv, the page's framing
panel and the answers' sentences read that field and count alike.
"""

from __future__ import annotations

# The http lens's CheckOutcome.PASS and INFO, as words: the record imports no lens, and releases
# reads the same rule (tests/test_conformance.py holds the two alike).
MET_OUTCOMES = ("pass", "info")


def met(outcome: str) -> bool:
    return outcome in MET_OUTCOMES
