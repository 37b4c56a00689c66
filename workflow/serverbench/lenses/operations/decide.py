"""A server in operation, judged between servers: every declared pair (decide.pairs:
one server in two languages, a twin against its original, a variant, a named pair)
compared check by check, on the figures each life or reload gave (tables.operations
.samples), with the same outcomes whatever the check: *lower*, *higher*,
*equivalent* (within the check's margin) or *undetermined*.

A check of seconds or megabytes is read as a ratio a/b of the two medians; the
failed requests of a reload, mostly none, as a difference of means (a ratio of
zeros says nothing), in requests per reload. The interval is a percentile
bootstrap over each side's own figures (SciPy), seeded so a table repeats; a
side with fewer than ``MIN_FIGURES`` figures is undetermined, with why. Lower is
better for every check here, so the outcome names the direction, not a winner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from serverbench.decide import margins
from serverbench.decide.judgement import HIGHER, LOWER, OPERATIONS, UNDETERMINED, Comparison, Reason
from serverbench.decide.pairs import declared_pairs
from serverbench.lenses.operations.table import samples

LEVEL = 0.95
# Fewer figures a side decide nothing: a percentile bootstrap of three lives gives an interval
# far narrower than its level (the operations profile's rounds: 5 lives, 15 reloads a side).
MIN_FIGURES = 5
RESAMPLES = 4000
SEED = 20261127
RATIO, DIFFERENCE = "ratio", "difference"


@dataclass(frozen=True)
class Check:
    """How one check is compared: its unit, the scale it is read on and its margin."""

    unit: str
    scale: str
    margin: float  # a share of b (ratio) or units (difference)


# The checks judged; memory per worker is a slope over lives, with its own interval, not compared.
CHECKS = {
    "cold_start_s": Check("s", RATIO, 0.10),
    "idle_uss_mb": Check("MB", RATIO, 0.05),
    "loaded_uss_mb": Check("MB", RATIO, 0.05),
    "reload_longest_gap_s": Check("s", RATIO, 0.10),
    "reload_failed": Check("requests per reload", DIFFERENCE, 0.5),
}


@dataclass(frozen=True)
class OperationsComparison(Comparison):
    """A ``Comparison`` of one operations check: its unit and scale, and each side's count."""

    check: str = ""
    unit: str = ""
    scale: str = RATIO
    n_a: int | None = None
    n_b: int | None = None

    def as_row(self) -> dict:
        return {**super().as_row(), "check": self.check, "unit": self.unit, "scale": self.scale,
                "n_a": self.n_a, "n_b": self.n_b}  # fmt: skip


def _statistic(check: Check):
    """(a against b over resamples along ``axis``, one side's figure)."""
    if check.scale == DIFFERENCE:
        return lambda a, b, axis=-1: np.mean(a, axis=axis) - np.mean(b, axis=axis), np.mean
    return lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis), np.median


def _outcome(check: Check, low: float, high: float) -> str:
    """Two servers of one run on a check: its interval against the check's margin."""
    scale = margins.Scale.DIFFERENCE if check.scale == DIFFERENCE else margins.Scale.RATIO
    found = margins.side(low, high, check.margin, margins.Question.IN_ONE_RUN, scale)
    return margins.outcome(found, above=HIGHER, below=LOWER)


def judge(kind: str, profile: str, name: str, a: tuple[str, list], b: tuple[str, list]) -> OperationsComparison:
    """One check of a pair: ``a`` and ``b`` are (server, its figures)."""
    check = CHECKS[name]
    (server_a, values_a), (server_b, values_b) = a, b
    made = {"kind": kind, "a": server_a, "b": server_b, "metric": OPERATIONS, "margin": check.margin,
            "condition": (("profile", profile), ("check", name)), "check": name, "unit": check.unit,
            "scale": check.scale, "n_a": len(values_a), "n_b": len(values_b), "level": LEVEL}  # fmt: skip
    if min(len(values_a), len(values_b)) < MIN_FIGURES:
        fewest = min(len(values_a), len(values_b))
        why = Reason("too_few", f"{fewest} figure(s) on one side: a bootstrap of fewer than {MIN_FIGURES} undercovers")
        return OperationsComparison(outcome=UNDETERMINED, reasons=(why,), **made)
    statistic, centre = _statistic(check)
    a_value, b_value = float(centre(values_a)), float(centre(values_b))
    if check.scale == RATIO and (a_value <= 0 or b_value <= 0):
        why = Reason("not_positive", "a median of 0: no ratio")
        return OperationsComparison(outcome=UNDETERMINED, a_value=a_value, b_value=b_value, reasons=(why,), **made)
    estimate = statistic(np.asarray(values_a), np.asarray(values_b))
    interval = stats.bootstrap(
        (np.asarray(values_a, dtype=float), np.asarray(values_b, dtype=float)),
        statistic,
        vectorized=True,
        n_resamples=RESAMPLES,
        confidence_level=LEVEL,
        method="percentile",
        rng=np.random.default_rng(SEED),
    ).confidence_interval
    low, high = float(interval.low), float(interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):  # a resample's median of 0 (a gap of none)
        why = Reason("not_positive", "a resample's median of 0: no interval for the ratio")
        return OperationsComparison(outcome=UNDETERMINED, a_value=a_value, b_value=b_value, reasons=(why,), **made)
    return OperationsComparison(
        outcome=_outcome(check, low, high), estimate=float(estimate), a_value=a_value, b_value=b_value,
        low=low, high=high, **made,
    )  # fmt: skip


def operations_comparisons(results: list[dict], config: dict) -> list[OperationsComparison]:
    """Every declared pair of each profile's servers, on every check both sides measured."""
    found = []
    by_profile: dict[str, dict[str, dict]] = {}
    for result in results:
        by_profile.setdefault(result["profile"], {})[result["server"]] = samples(result)
    for profile, servers in sorted(by_profile.items()):
        for kind, a, b in declared_pairs(config, sorted(servers)):
            for name in CHECKS:
                if servers[a].get(name) is not None and servers[b].get(name) is not None:
                    found.append(judge(kind, profile, name, (a, servers[a][name]), (b, servers[b][name])))
    return found


def operations_verdict_table(results: list[dict], config: dict) -> pd.DataFrame:
    """operations_verdicts.csv: a row per (profile, check, pair); ``estimate`` is a/b or a-b
    as ``scale`` says."""
    rows = [comparison.as_row() for comparison in operations_comparisons(results, config)]
    for row in rows:
        row["estimate"] = row.pop("ratio")
    columns = ["profile", "check", "kind", "a", "b", "metric", "unit", "scale", "a_value", "b_value", "estimate",
               "ci_low", "ci_high", "level", "margin", "outcome", "n_a", "n_b", "reason_codes", "why"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)
