"""Estimates from one cell's repeats: the median with its distribution-free
confidence interval, and the precision it reached (half the interval's width,
as a share).

The interval is a pair of order statistics whose coverage is at least the
level asked (SciPy's ``stats.quantile_test``, the binomial interval for a
quantile). Fewer than 6 repeats cannot cover a median at 95%: the interval is
then unbounded (None), which is the honest answer — a percentile bootstrap of
3 to 7 repeats returns a pair of order statistics covering only 75–94%.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def clean(values) -> np.ndarray:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    return array[~np.isnan(array)]


def median_ci(values, confidence: float, seed: int = 0) -> tuple[float | None, float | None]:
    """The median's interval from order statistics, covering at least ``confidence``
    (None where the repeats are too few for that coverage). ``seed`` is unused: the
    interval is exact, and kept for callers that pass the run's seed."""
    data = clean(values)
    if len(data) < 2:
        return None, None
    interval = stats.quantile_test(data, q=float(np.median(data)), p=0.5).confidence_interval(confidence)
    if not (np.isfinite(interval.low) and np.isfinite(interval.high)):
        return None, None
    return float(interval.low), float(interval.high)


def relative_half_width(values, confidence: float, seed: int) -> float | None:
    """Half the width of the median's interval, as a share of the median: the precision reached."""
    low, high = median_ci(values, confidence, seed)
    data = clean(values)
    if low is None or not len(data) or not np.median(data):
        return None
    return float((high - low) / 2 / np.median(data))
