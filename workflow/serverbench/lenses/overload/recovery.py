"""Whether a server comes back after a burst: the client that offers the after-rate throughout
(the burst's load on top of it for its seconds) is read in windows from the burst's end. A window
*meets* the offered rate where the answers within the objective of the requests due in it are at
least ``share`` of those due, and the p99 of its answers is within the objective. The server has
recovered at the first window from which every later one meets it; where the last does not, it
never recovered within the window (None)."""

from __future__ import annotations

import numpy as np

from serverbench.lenses.overload.client import Answer


def window_meets(answers: list[Answer], due: float, objective_s: float, share: float) -> bool:
    """Whether one window's answers meet the offered rate (``due``: requests due in it)."""
    good = sum(1 for a in answers if a.status < 500 and a.latency_s <= objective_s)
    if not answers or good < share * due:
        return False
    return float(np.percentile([a.latency_s for a in answers], 99)) <= objective_s


def recovery_s(
    answers: list[Answer],
    since_s: float,
    until_s: float,
    rate: float,
    objective_s: float,
    window_s: float,
    share: float,
) -> float | None:
    """Seconds from ``since_s`` (the burst's end) until the offered ``rate`` is met again and stays
    met until ``until_s``; None: never within the window."""
    starts = np.arange(since_s, until_s - window_s / 2, window_s)
    meets = []
    for start in starts:
        inside = [a for a in answers if start <= a.due_s < start + window_s]
        meets.append(window_meets(inside, rate * window_s, objective_s, share))
    if not meets or not meets[-1]:
        return None
    first = len(meets)
    while first > 0 and meets[first - 1]:
        first -= 1
    return round(float(starts[first] - since_s), 3)
