"""How two servers compare at one condition, and how sure a run can be.

A run measures in rounds: each round holds one repeat of every cell, in its
own random order, so the slow drifts of a shared machine (minutes of a busy
neighbour) fall on every server of a round alike. The ratio A/B is then
estimated from a model of the run: log req/s with a server and a round effect
(statsmodels' OLS on the two servers' repeats, which is the paired comparison
round by round), its interval from the model's t distribution. Where repeats
carry no rounds that line up, the estimate is Hodges–Lehmann's (the median of
every pairwise log ratio) with the interval that inverts the exact
Mann–Whitney test (SciPy's exact distribution gives the order statistics).

Every interval is at the level Holm's procedure used for its comparison
(``holm_levels``), so an interval and its test never disagree, and the outcome
reads the interval against a margin: *faster* or *slower* by more than the
margin, *equivalent* within it (the two one-sided tests, at that level), or
*undetermined*, with the smallest ratio the comparison could have detected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

from serverbench.decide import margins
from serverbench.record.vocabulary import Outcome

# Re-exported for the callers that read them here (record.vocabulary defines them).
FASTER, SLOWER, EQUIVALENT, UNDETERMINED = Outcome.FASTER, Outcome.SLOWER, Outcome.EQUIVALENT, Outcome.UNDETERMINED

POWER = 0.8  # the detectable ratio is the one this comparison would decide this often


@dataclass(frozen=True)
class Estimate:
    """The log ratio A/B of one comparison, and what its interval is made of.

    ``se`` and ``df`` describe the rounds model; ``pairwise`` (every log A - log B)
    the Hodges–Lehmann estimate, for which ``se`` is None.
    """

    method: str
    n_a: int
    n_b: int
    log_ratio: float
    p_value: float
    se: float | None = None
    df: float | None = None
    pairwise: tuple[float, ...] = ()

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    def interval(self, alpha: float) -> tuple[float, float]:
        """The ratio's two-sided interval at confidence 1 - alpha."""
        if self.se is not None:
            half = stats.t.ppf(1 - alpha / 2, self.df) * self.se
            return math.exp(self.log_ratio - half), math.exp(self.log_ratio + half)
        low, high = _rank_interval(np.asarray(self.pairwise), self.n_a, self.n_b, alpha)
        return math.exp(low), math.exp(high)

    def can_reach(self, alpha: float) -> bool:
        """Whether any data of this shape could give a p-value below alpha."""
        if self.se is not None:
            return self.df >= 1
        return smallest_rank_p(self.n_a, self.n_b) < alpha

    def detectable_ratio(self, alpha: float, margin: float) -> float:
        """The smallest ratio (above 1) this comparison would find *faster* than the
        margin with probability ``POWER``, given its repeats, level and spread."""
        low, high = self.interval(alpha)
        half = (math.log(high) - math.log(low)) / 2
        if self.se is not None:
            crit, power = stats.t.ppf(1 - alpha / 2, self.df), stats.t.ppf(POWER, self.df)
        else:
            crit, power = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(POWER)
        return math.exp(math.log1p(margin) + half * (1 + power / crit))


NUMERIC_FLOOR = 1e-9  # relative: a standard error or an effect below it is rounding


def by_rounds(a: pd.Series, b: pd.Series) -> Estimate | None:
    """The rounds model for two servers' log req/s, indexed by round; None when
    fewer than two rounds hold both (then nothing pairs them)."""
    both = a.index.intersection(b.index)
    if len(both) < 2:
        return None
    log_a, log_b = np.log(a.loc[both].astype(float)), np.log(b.loc[both].astype(float))
    y = np.concatenate([log_a.to_numpy(), log_b.to_numpy()])
    rounds = pd.get_dummies(pd.Categorical(list(both) * 2), drop_first=True, dtype=float)
    design = np.column_stack([np.ones(len(y)), np.r_[np.ones(len(both)), np.zeros(len(both))], rounds.to_numpy()])
    fit = sm.OLS(y, design).fit()
    if fit.df_resid < 1 or not np.isfinite(fit.bse[1]):
        return None
    # Rounds that fit exactly (two sides alike in every round: Jain's index 1.0 against 1.0)
    # leave a standard error of rounding noise, whose t and p changed with the machine's BLAS
    # (0.707 on one host, 1.0 on another): below NUMERIC_FLOOR the fit is exact, and its p 1 or 0.
    scale = max(1.0, float(np.abs(y).max()))
    if fit.bse[1] > NUMERIC_FLOOR * scale:
        p_value = float(fit.pvalues[1])
    else:
        p_value = float(abs(fit.params[1]) <= NUMERIC_FLOOR * scale)
    return Estimate(
        "rounds model", len(both), len(both), float(fit.params[1]), p_value, float(fit.bse[1]), float(fit.df_resid)
    )


def by_ranks(a, b) -> Estimate | None:
    """Hodges–Lehmann's log ratio and the exact Mann–Whitney test, for unpaired repeats."""
    log_a, log_b = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    if len(log_a) < 2 or len(log_b) < 2:
        return None
    pairwise = np.subtract.outer(log_a, log_b).ravel()
    ties = len(np.unique(np.concatenate([log_a, log_b]))) < len(log_a) + len(log_b)
    method = "asymptotic" if ties or len(pairwise) > 900 else "exact"
    p_value = float(stats.mannwhitneyu(log_a, log_b, alternative="two-sided", method=method).pvalue)
    return Estimate(
        "Hodges-Lehmann", len(log_a), len(log_b), float(np.median(pairwise)), p_value, pairwise=tuple(sorted(pairwise))
    )


def estimate(a: pd.Series, b: pd.Series) -> Estimate | None:
    """The rounds model where the two servers share rounds, else the rank estimate.
    ``a`` and ``b`` are req/s indexed by round (an index of None: no rounds)."""
    a, b = a.dropna(), b.dropna()
    a, b = a[a > 0], b[b > 0]
    has_rounds = a.index.notna().all() and b.index.notna().all()
    return (by_rounds(a, b) if has_rounds else None) or by_ranks(a.to_numpy(), b.to_numpy())


def smallest_rank_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value the exact Mann–Whitney test of n_a against n_b gives."""
    if not n_a or not n_b:
        return 1.0
    x, y = np.arange(n_a, n_a + n_b), np.arange(n_a)
    return float(stats.mannwhitneyu(x, y, alternative="two-sided", method="exact").pvalue)


def _rank_cdf(u: int, n_a: int, n_b: int) -> float:
    """P(U <= u) under the null, from SciPy's exact Mann–Whitney distribution: two
    samples built to have exactly ``u`` pairs with a above b (no ties between them)."""
    counts = [min(n_b, max(0, u - n_b * i)) for i in range(n_a)]
    a = np.asarray(counts, dtype=float) - 0.5 + np.arange(n_a) * 1e-6
    return float(stats.mannwhitneyu(a, np.arange(n_b), alternative="less", method="exact").pvalue)


@lru_cache(maxsize=4096)
def _rank_depth(n_a: int, n_b: int, alpha: float) -> int:
    """k, the largest count with P(U < k) <= alpha / 2 (0: no interval at this level)."""
    k = 0
    while k < n_a * n_b and _rank_cdf(k, n_a, n_b) <= alpha / 2:
        k += 1
    return k


def _rank_interval(pairwise: np.ndarray, n_a: int, n_b: int, alpha: float) -> tuple[float, float]:
    """The Mann–Whitney-inverted interval: the k-th smallest and largest pairwise difference."""
    k = _rank_depth(n_a, n_b, alpha)
    if k == 0:  # too few repeats for this level: the interval is unbounded
        return -math.inf, math.inf
    ordered = np.sort(pairwise)
    return float(ordered[k - 1]), float(ordered[len(ordered) - k])


def holm_levels(p_values: list[float | None], alpha: float) -> tuple[list[float | None], list[float | None]]:
    """Holm's adjusted p-values and, for each test, the level its interval is drawn at:
    alpha / (m - i + 1) at its step for a rejected test, and the level of the step
    where the procedure stopped for the rest. Untested entries (None) stay None."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    levels: list[float | None] = [None] * len(p_values)
    if not tested:
        return adjusted, levels
    corrected = multipletests([p for p, _ in tested], alpha=alpha, method="holm")[1]
    m, stop = len(tested), None
    for step, ((p, index), value) in enumerate(zip(tested, corrected, strict=True)):
        adjusted[index] = float(value)
        level = alpha / (m - step)
        if stop is None and p > level:
            stop = level
        levels[index] = level if stop is None else stop
    return adjusted, levels


ROUNDS_CAP = 1000


def rounds_to_decide(ratio: float, low: float, high: float, rounds: int, margin: float) -> int | None:
    """The rounds at which this comparison's interval, with the same noise per round and the
    same estimate, would clear the nearer edge of the ±margin band: wholly outside it (faster
    or slower) where the estimate lies outside, wholly inside (equivalent) where it lies
    within. Its half-width falls as one over the square root of the rounds (the t quantile's
    own fall with more degrees of freedom left out, so it errs high). At most ROUNDS_CAP."""
    if not rounds or not (0 < low <= ratio <= high):
        return None
    half = (math.log(high) - math.log(low)) / 2
    distance = abs(abs(math.log(ratio)) - math.log1p(margin))
    if half <= 0:
        return None
    if distance <= 0:
        return ROUNDS_CAP
    return min(ROUNDS_CAP, max(rounds + 1, math.ceil(rounds * (half / distance) ** 2)))


def outcome(low: float, high: float, margin: float) -> Outcome:
    """The interval of a ratio A/B of two servers of one run against the margin
    (``margins.Question.IN_ONE_RUN``): faster, slower, equivalent or undetermined."""
    found = margins.side(low, high, margin, margins.Question.IN_ONE_RUN)
    return margins.outcome(found, above=FASTER, below=SLOWER)
