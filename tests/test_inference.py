"""The rounds model, the rank interval, Holm's levels and the three outcomes, on
data with a known truth; and the old design against the new on a simulated
noisy machine (benchmarks/noise_simulation.py, a short version)."""

import math
import sys

import numpy as np
import pandas as pd
import pytest
from serverbench import REPO_ROOT
from serverbench.decide import compare, inference
from serverbench.plan import config as cfg

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import noise_simulation  # noqa: E402


def by_round(values) -> pd.Series:
    return pd.Series(values, index=range(1, len(values) + 1), dtype=float)


def test_the_rounds_model_takes_a_drift_out_that_ranks_cannot():
    rng = np.random.default_rng(3)
    drift = np.exp(rng.normal(0, 0.3, 7))  # the machine's speed per round, shared by both servers
    a = by_round(1200 * drift * np.exp(rng.normal(0, 0.01, 7)))
    b = by_round(1000 * drift * np.exp(rng.normal(0, 0.01, 7)))
    model = inference.estimate(a, b)
    assert model.method == "rounds model" and model.ratio == pytest.approx(1.2, rel=0.02)
    assert inference.outcome(*model.interval(0.01), 0.05) == "faster"
    ranks = inference.by_ranks(a.to_numpy(), b.to_numpy())
    assert inference.outcome(*ranks.interval(0.01), 0.05) == "undetermined"


def test_repeats_without_rounds_get_hodges_lehmann_and_the_inverted_rank_test():
    a = pd.Series([1100.0, 1210, 1150, 1180, 1120], index=[None] * 5)
    b = pd.Series([1000.0, 1040, 990, 1010, 1030], index=[None] * 5)
    found = inference.estimate(a, b)
    assert found.method == "Hodges-Lehmann"
    pairwise = np.log(a.to_numpy())[:, None] - np.log(b.to_numpy())[None, :]
    assert found.log_ratio == pytest.approx(np.median(pairwise))
    # 5 against 5 at 95%: the 3rd smallest and largest of the 25 pairwise log ratios (tables: C = 3).
    ordered = np.sort(pairwise.ravel())
    low, high = found.interval(0.05)
    assert (np.log(low), np.log(high)) == pytest.approx((ordered[2], ordered[-3]))


def test_an_interval_and_its_test_never_disagree():
    rng = np.random.default_rng(5)
    for trial in range(200):
        a, b = (by_round(rng.lognormal(7, 0.2, 5)) for _ in range(2))
        for found in (inference.estimate(a, b), inference.by_ranks(a.to_numpy(), b.to_numpy())):
            for level in (0.05, 0.01):
                low, high = found.interval(level)
                excludes_one = low > 1 or high < 1
                if found.se is not None:
                    assert excludes_one == (found.p_value < level), (trial, level)
                elif excludes_one:  # ranks: discrete, so the interval may only be the more careful of the two
                    assert found.p_value < level


def test_holm_draws_each_interval_at_the_level_of_its_step():
    adjusted, levels = inference.holm_levels([0.001, 0.2, None, 0.01, 0.03], 0.05)
    assert adjusted[2] is None and levels[2] is None
    assert levels[0] == pytest.approx(0.05 / 4) and levels[3] == pytest.approx(0.05 / 3)
    # 0.03 fails its step (0.05 / 2): it and everything after it take the level where Holm stopped.
    assert levels[4] == levels[1] == pytest.approx(0.05 / 2)
    assert [p < 0.05 for p in (adjusted[0], adjusted[3], adjusted[4])] == [True, True, False]


@pytest.mark.parametrize(
    "interval, outcome",
    [((1.06, 1.3), "faster"), ((0.7, 0.94), "slower"), ((0.97, 1.04), "equivalent"), ((1.01, 1.2), "undetermined")],
)
def test_an_interval_reads_against_the_margin(interval, outcome):
    assert inference.outcome(*interval, 0.05) == outcome


# Two servers of one run: the band [1/(1+m), 1+m] (docs/architecture.md, decide/margins), written
# here by hand for m = 5%; faster and slower mean beyond it by more than the margin.
UPPER, LOWER, TINY = 1 + 0.05, 1 / (1 + 0.05), 1e-9


@pytest.mark.parametrize(
    "interval, outcome",
    [
        ((UPPER, 1.3), "undetermined"),  # on the edge: not faster by more than the margin
        ((UPPER + TINY, 1.3), "faster"),
        ((0.7, LOWER), "undetermined"),
        ((0.7, LOWER - TINY), "slower"),
        ((LOWER, UPPER), "equivalent"),  # edges included
        ((LOWER - TINY, UPPER), "undetermined"),
        ((LOWER, UPPER + TINY), "undetermined"),
        ((1 - 0.05, 1.0), "undetermined"),  # 0.95 is below 1/1.05: outside the band of one run
    ],
)
def test_an_interval_at_the_margins_edges_reads_as_its_band_says(interval, outcome):
    assert inference.outcome(*interval, 0.05) == outcome


def test_what_a_comparison_could_have_told_grows_with_its_spread_and_shrinks_with_its_rounds():
    rng = np.random.default_rng(9)

    def detectable(cv, n):
        a, b = by_round(1000 * np.exp(rng.normal(0, cv, n))), by_round(1000 * np.exp(rng.normal(0, cv, n)))
        return inference.estimate(a, b).detectable_ratio(0.01, 0.05)

    assert detectable(0.02, 7) < detectable(0.2, 7)
    assert detectable(0.1, 20) < detectable(0.1, 4)
    assert detectable(0.02, 7) > 1.05  # never inside the margin


def test_rank_tests_that_cannot_reach_significance_say_so():
    assert inference.smallest_rank_p(3, 3) == pytest.approx(0.1)
    three = inference.by_ranks([1.0, 2, 3], [4.0, 5, 6])
    assert not three.can_reach(0.05) and three.interval(0.05) == (0.0, float("inf"))


def test_the_new_design_keeps_its_targets_on_a_simulated_noisy_machine():
    """A short version of benchmarks/noise_simulation.py (fixed seeds: no machine speed involved)."""
    results = pd.concat([noise_simulation.simulate("new", n, runs=40, seed=n) for n in (3, 7)], ignore_index=True)
    table = noise_simulation.summarise(results).set_index(["repeats", "server"])
    assert (table.xs("alias", level="server")["decided"] <= 0.05).all()  # false verdicts at a true 1.0
    assert (table["reversal"] == 0).all()
    assert (table["covered"] >= 0.9).all()
    assert table.loc[(7, "x2.0"), "decided"] >= 0.9


def test_compare_rarely_alarms_on_runs_that_only_drift_and_never_passes_a_slowed_copy():
    """Simulated pairs of runs, every server shifted by its own exp(N(0, 0.1)) between them."""
    config = cfg.load(REPO_ROOT / "config.yaml")
    exits = noise_simulation.compare_exits(config, pairs=100, seed=7)
    assert exits.get(1, 0.0) <= 0.05
    rng = np.random.default_rng(11)
    slowed_exits, same_exits = [], []
    for _ in range(20):
        run = noise_simulation.simulated_run(rng)
        slowed = run[0].copy()
        slowed.loc[slowed["server"] == "a", "rps"] *= 0.8
        slowed_exits.append(compare.exit_status(compare.compare_sets(run, (slowed, run[1], {}), config, 0.05), 0.05)[0])
        same_exits.append(compare.exit_status(compare.compare_sets(run, run, config, 0.05), 0.05)[0])
    # A copy slowed by 20% is never passed: shown worse (exit 1) in most, else cannot tell (3), never 0.
    assert set(slowed_exits) <= {1, 3} and slowed_exits.count(1) >= 10, slowed_exits
    # A run compared with itself between runs: time cannot show it within 5% (docs/statistics.md), never worse.
    assert set(same_exits) == {3}, same_exits


@pytest.mark.parametrize(
    ("ratio", "low", "high"),
    [(1.0, 0.9, 1 / 0.9), (1.10, 0.95, 1.27), (0.97, 0.90, 1.045)],
)
def test_rounds_to_decide_is_the_fewest_that_clear_the_margins_edge(ratio, low, high):
    """At the rounds it names, the same noise per round gives an interval that clears the
    nearer edge of the ±2% band (outside it where the estimate is, inside where it is); one
    round fewer does not."""
    rounds, margin = 7, 0.02
    needed = inference.rounds_to_decide(ratio, low, high, rounds, margin)
    half = (math.log(high) - math.log(low)) / 2
    distance = abs(abs(math.log(ratio)) - math.log1p(margin))
    assert half * math.sqrt(rounds / needed) <= distance < half * math.sqrt(rounds / (needed - 1))


def test_rounds_to_decide_at_the_edge_is_capped():
    assert inference.rounds_to_decide(1.02, 0.98, 1.06, 7, 0.02) == inference.ROUNDS_CAP
