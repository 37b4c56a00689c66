"""Estimates from one cell's repeats: the median with a bootstrap confidence
interval, and the precision it reached (half the interval's width, as a share).

SciPy's ``stats.bootstrap`` does the work; it draws from a generator seeded by
the run's seed, so the same results give the same intervals.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

RESAMPLES = 2000


def clean(values) -> np.ndarray:
    array = np.asarray([v for v in values if v is not None], dtype=float)
    return array[~np.isnan(array)]


def median_ci(values, confidence: float, seed: int) -> tuple[float | None, float | None]:
    """A percentile-bootstrap confidence interval of the median (None with fewer than 2 values)."""
    data = clean(values)
    if len(data) < 2:
        return None, None
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    result = stats.bootstrap(
        (data,), np.median, confidence_level=confidence, n_resamples=RESAMPLES,
        method="percentile", rng=np.random.default_rng(seed),
    )  # fmt: skip
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def relative_half_width(values, confidence: float, seed: int) -> float | None:
    """Half the width of the median's interval, as a share of the median: the precision reached."""
    low, high = median_ci(values, confidence, seed)
    data = clean(values)
    if low is None or not len(data) or not np.median(data):
        return None
    return float((high - low) / 2 / np.median(data))
