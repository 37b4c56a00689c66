"""Two sides' handful of figures compared by a percentile bootstrap (SciPy), seeded so a table
repeats: the interval the lenses that judge a few figures a side (a server's lives, a run's
seconds or restarts) read against their check's margin with the one rule (``decide.margins``).

A ratio reads the medians a/b; a difference reads the means a-b (failed requests, mostly none:
a ratio of zeros says nothing). A side with fewer than ``min_figures`` figures gives no interval,
and says why: a bootstrap of so few undercovers. ``judge`` reads one check's interval against its
margin (``CheckRule``), as the operations and recycle lenses judge theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats

from serverbench.decide import margins
from serverbench.decide.judgement import HIGHER, LOWER, UNDETERMINED, Comparison, Reason

LEVEL = 0.95
RESAMPLES = 4000
MIN_FIGURES = 5


# A check verdict table's columns after the lens's own condition columns (profile, server, ...):
# what each comparison's row holds (Comparison.as_row, its ratio as `estimate`).
CHECK_VERDICT_COLUMNS = [
    "check",
    "kind",
    "a",
    "b",
    "metric",
    "unit",
    "scale",
    "a_value",
    "b_value",
    "estimate",
    "ci_low",
    "ci_high",
    "level",
    "margin",
    "outcome",
    "n_a",
    "n_b",
    "reason_codes",
    "why",
]


class Read(StrEnum):
    """How a pair of figures is read: a/b of the medians, or a-b of the means."""

    RATIO = "ratio"
    DIFFERENCE = "difference"


@dataclass(frozen=True)
class Interval:
    """The estimate, each side's figure and the interval; or, where there is none, why."""

    estimate: float | None = None
    a_value: float | None = None
    b_value: float | None = None
    low: float | None = None
    high: float | None = None
    reason: Reason | None = None


@dataclass(frozen=True)
class CheckComparison(Comparison):
    """A ``Comparison`` of one check of a lens that judges a few figures a side: the check, its
    unit, how it is read (``Read``) and each side's count of figures."""

    check: str = ""
    unit: str = ""
    scale: str = Read.RATIO.value
    n_a: int | None = None
    n_b: int | None = None

    def as_row(self) -> dict:
        return {
            **super().as_row(),
            "check": self.check,
            "unit": self.unit,
            "scale": self.scale,
            "n_a": self.n_a,
            "n_b": self.n_b,
        }


@dataclass(frozen=True)
class CheckRule:
    """How one check is judged: its unit, how a pair of its figures is read (``Read``) and its
    margin, a share of b (ratio) or units (difference)."""

    unit: str
    scale: str
    margin: float


def judge(
    rule: CheckRule,
    check: str,
    a: tuple[str, list],
    b: tuple[str, list],
    seed: int,
    min_figures: int = MIN_FIGURES,
    **made,
) -> CheckComparison:
    """One check of two sides, ``a`` and ``b`` each (label, its figures): the interval read against
    the check's margin as two things measured in one run, *higher*, *lower*, *equivalent* or
    *undetermined*. ``made`` holds the comparison's kind, metric and condition (the check added)."""
    (label_a, values_a), (label_b, values_b) = a, b
    made = {
        **made,
        "a": label_a,
        "b": label_b,
        "margin": rule.margin,
        "condition": (*made["condition"], ("check", check)),
        "check": check,
        "unit": rule.unit,
        "scale": rule.scale,
        "n_a": len(values_a),
        "n_b": len(values_b),
        "level": LEVEL,
    }
    found = interval(values_a, values_b, Read(rule.scale), seed, min_figures)
    if found.reason is not None:
        return CheckComparison(
            outcome=UNDETERMINED, a_value=found.a_value, b_value=found.b_value, reasons=(found.reason,), **made
        )
    scale = margins.Scale.DIFFERENCE if rule.scale == Read.DIFFERENCE else margins.Scale.RATIO
    side = margins.side(found.low, found.high, rule.margin, margins.Question.IN_ONE_RUN, scale)
    return CheckComparison(
        outcome=margins.outcome(side, above=HIGHER, below=LOWER),
        estimate=found.estimate,
        a_value=found.a_value,
        b_value=found.b_value,
        low=found.low,
        high=found.high,
        **made,
    )


def _statistic(read: Read):
    """(a against b over resamples along ``axis``, one side's figure)."""
    if read == Read.DIFFERENCE:
        return lambda a, b, axis=-1: np.mean(a, axis=axis) - np.mean(b, axis=axis), np.mean
    return lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis), np.median


def interval(values_a, values_b, read: Read, seed: int, min_figures: int = MIN_FIGURES) -> Interval:
    """``a`` against ``b``: the estimate and its percentile bootstrap interval at ``LEVEL``."""
    if min(len(values_a), len(values_b)) < min_figures:
        fewest = min(len(values_a), len(values_b))
        return Interval(
            reason=Reason(
                "too_few", f"{fewest} figure(s) on one side: a bootstrap of fewer than {min_figures} undercovers"
            )
        )
    statistic, centre = _statistic(Read(read))
    a_value, b_value = float(centre(values_a)), float(centre(values_b))
    if read == Read.RATIO and (a_value <= 0 or b_value <= 0):
        return Interval(a_value=a_value, b_value=b_value, reason=Reason("not_positive", "a median of 0: no ratio"))
    a, b = np.asarray(values_a, dtype=float), np.asarray(values_b, dtype=float)
    estimate = float(statistic(a, b))
    found = stats.bootstrap(
        (a, b),
        statistic,
        vectorized=True,
        n_resamples=RESAMPLES,
        confidence_level=LEVEL,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    low, high = float(found.low), float(found.high)
    if not (math.isfinite(low) and math.isfinite(high)):  # a resample's median of 0 (a gap of none)
        why = Reason("not_positive", "a resample's median of 0: no interval for the ratio")
        return Interval(a_value=a_value, b_value=b_value, reason=why)
    return Interval(estimate, a_value, b_value, low, high)
