"""Two cells compared: the ratio of their median req/s with its interval, a
Mann-Whitney rank test, and Holm's correction across every comparison of a run.

The heavy lifting is SciPy's (``stats.bootstrap``, ``stats.mannwhitneyu``) and
statsmodels' (``multipletests``); bootstraps draw from a generator seeded by
the run's seed, so the same results give the same intervals. One cell's
estimates are ``serverbench.tables.estimates``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from serverbench.decide import margins
from serverbench.record.vocabulary import Outcome
from serverbench.tables.estimates import clean

# Resamples of the ratio's bootstrap: enough for a stable 95% percentile interval.
RESAMPLES = 2000


def _ratio_of_medians(a, b, axis=-1):
    return np.median(a, axis=axis) / np.median(b, axis=axis)


@dataclass(frozen=True)
class RankComparison:
    """A against B: ratio of medians (A/B) with its interval and the rank test's p-value."""

    n_a: int
    n_b: int
    median_a: float
    median_b: float
    ratio: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None

    def fields(self) -> dict:
        """The comparison as the columns of a verdicts row."""
        return dataclasses.asdict(self)


def compare(a, b, confidence: float, seed: int) -> RankComparison:
    """Two samples of repeats; the interval and the test need at least 2 values on each side."""
    x, y = clean(a), clean(b)
    median_a, median_b = float(np.median(x)), float(np.median(y))
    ratio = median_a / median_b if median_b else float("nan")
    if len(x) < 2 or len(y) < 2 or not median_b:
        return RankComparison(len(x), len(y), median_a, median_b, ratio, None, None, None)
    interval = stats.bootstrap(
        (x, y),
        _ratio_of_medians,
        confidence_level=confidence,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(seed),
        vectorized=True,
    ).confidence_interval
    # The exact distribution where there are no ties: the normal approximation is anticonservative at ten repeats.
    ties = len(np.unique(np.concatenate([x, y]))) < len(x) + len(y)
    method = "asymptotic" if ties or len(x) + len(y) > 60 else "exact"
    p_value = float(stats.mannwhitneyu(x, y, alternative="two-sided", method=method).pvalue)
    return RankComparison(len(x), len(y), median_a, median_b, ratio, float(interval.low), float(interval.high), p_value)


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (family-wise error across every test of a run); None stays None."""
    tested = [(i, p) for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if tested:
        corrected = multipletests([p for _, p in tested], method="holm")[1]
        for (index, _), value in zip(tested, corrected, strict=True):
            adjusted[index] = float(value)
    return adjusted


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value a rank test of n_a against n_b values can give."""
    if not n_a or not n_b:
        return 1.0
    return float(stats.mannwhitneyu(np.arange(n_a), np.arange(n_a, n_a + n_b), alternative="two-sided").pvalue)


def verdict(
    ci_low: float | None,
    ci_high: float | None,
    p_adjusted: float | None,
    alpha: float,
    above: Outcome = Outcome.FASTER,
    below: Outcome = Outcome.SLOWER,
) -> Outcome:
    """``above`` or ``below`` (A against B) only when the corrected rank test is significant
    and the interval of the ratio lies wholly on one side of 1 (the one rule,
    ``margins.side``, with no margin: a rank test declares none); otherwise undetermined."""
    if p_adjusted is None or p_adjusted >= alpha or ci_low is None or ci_high is None:
        return Outcome.UNDETERMINED
    found = margins.side(ci_low, ci_high, 0.0, margins.Question.IN_ONE_RUN)
    if found in (margins.Side.ABOVE, margins.Side.BELOW):
        return margins.outcome(found, above, below)
    return Outcome.UNDETERMINED
