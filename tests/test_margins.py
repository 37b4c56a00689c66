"""The one decision rule (serverbench.decide.margins) at the band's edges, and the margin every
shipped comparison is read against, by value.

The bands are written here from the documented definition, not from the code: *equivalent*
means the whole interval lies within the band (edges included), *faster* and *slower* mean
beyond it by more than the margin (an interval touching an edge is not beyond it:
docs/statistics.md). Two things measured in one run have the band [1/(1+m), 1+m], symmetric on
the log scale; a change between two runs has [1-m, 1+m], a share of the baseline
(docs/architecture.md, ``decide/margins``); a difference is read against [-m, m]."""

import pytest
from serverbench import REPO_ROOT
from serverbench.decide.margins import Question, Scale, Side, band, margin_for, side
from serverbench.lenses.operations import decide as operations_decide
from serverbench.lenses.recycle import decide as recycle_decide
from serverbench.plan import config as cfg
from serverbench.record.vocabulary import Kind

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

# Far smaller than any margin, far larger than a double's rounding near 1 (2.2e-16).
TINY = 1e-9
# An interval's other end, far from the band either way: ratios, and differences.
WIDE_BELOW, WIDE_ABOVE = 0.5, 1.5
DIFFERENCE_BELOW, DIFFERENCE_ABOVE = -2.0, 2.0

IN_ONE_RUN_MARGIN = 0.02
IN_ONE_RUN_LOWER, IN_ONE_RUN_UPPER = 1 / (1 + IN_ONE_RUN_MARGIN), 1 + IN_ONE_RUN_MARGIN
BETWEEN_RUNS_MARGIN = 0.05
BETWEEN_RUNS_LOWER, BETWEEN_RUNS_UPPER = 1 - BETWEEN_RUNS_MARGIN, 1 + BETWEEN_RUNS_MARGIN
DIFFERENCE_MARGIN = 0.5


def test_each_question_has_its_documented_band():
    assert band(IN_ONE_RUN_MARGIN, Question.IN_ONE_RUN) == pytest.approx((0.9803921568627451, 1.02), rel=1e-15)
    assert band(BETWEEN_RUNS_MARGIN, Question.BETWEEN_RUNS) == pytest.approx((0.95, 1.05), rel=1e-15)
    for question in Question:
        assert band(DIFFERENCE_MARGIN, question, Scale.DIFFERENCE) == (-0.5, 0.5)


def edge_cases(lower: float, upper: float, below=WIDE_BELOW, above=WIDE_ABOVE) -> list[tuple[float, float, Side]]:
    """Intervals exactly at a band's edges, a tiny step inside them and a tiny step outside
    (``below``, ``above``: the other end of an interval reaching out of the band)."""
    return [
        # Touching the upper edge from above is not beyond it; a tiny step further is.
        (upper, above, Side.ACROSS),
        (upper + TINY, above, Side.ABOVE),
        (upper - TINY, above, Side.ACROSS),
        # Touching the lower edge from below likewise.
        (below, lower, Side.ACROSS),
        (below, lower - TINY, Side.BELOW),
        (below, lower + TINY, Side.ACROSS),
        # The whole band, edges included, is within; a tiny step past either edge is not.
        (lower, upper, Side.WITHIN),
        (lower + TINY, upper - TINY, Side.WITHIN),
        (lower - TINY, upper, Side.ACROSS),
        (lower, upper + TINY, Side.ACROSS),
        # A point interval on an edge lies within the band.
        (upper, upper, Side.WITHIN),
        (lower, lower, Side.WITHIN),
        (upper + TINY, upper + TINY, Side.ABOVE),
        (lower - TINY, lower - TINY, Side.BELOW),
    ]


@pytest.mark.parametrize(("low", "high", "expected"), edge_cases(IN_ONE_RUN_LOWER, IN_ONE_RUN_UPPER))
def test_two_things_of_one_run_are_read_at_the_edges_of_their_log_symmetric_band(low, high, expected):
    assert side(low, high, IN_ONE_RUN_MARGIN, Question.IN_ONE_RUN) is expected


@pytest.mark.parametrize(("low", "high", "expected"), edge_cases(BETWEEN_RUNS_LOWER, BETWEEN_RUNS_UPPER))
def test_a_change_between_runs_is_read_at_the_edges_of_its_share_of_the_baseline(low, high, expected):
    assert side(low, high, BETWEEN_RUNS_MARGIN, Question.BETWEEN_RUNS) is expected


@pytest.mark.parametrize(
    ("low", "high", "expected"), edge_cases(-DIFFERENCE_MARGIN, DIFFERENCE_MARGIN, DIFFERENCE_BELOW, DIFFERENCE_ABOVE)
)
def test_a_difference_is_read_at_the_edges_of_plus_or_minus_its_margin(low, high, expected):
    assert side(low, high, DIFFERENCE_MARGIN, Question.IN_ONE_RUN, Scale.DIFFERENCE) is expected


def test_the_two_questions_bands_differ_where_one_run_is_log_symmetric():
    """Between 1-m and 1/(1+m): beyond the band of one run, inside the band between runs."""
    high = 1 / (1 + BETWEEN_RUNS_MARGIN) - TINY  # 0.952...: above 1 - m = 0.95
    assert side(WIDE_BELOW, high, BETWEEN_RUNS_MARGIN, Question.IN_ONE_RUN) is Side.BELOW
    assert side(WIDE_BELOW, high, BETWEEN_RUNS_MARGIN, Question.BETWEEN_RUNS) is Side.ACROSS
    assert side(1 - BETWEEN_RUNS_MARGIN, 1, BETWEEN_RUNS_MARGIN, Question.IN_ONE_RUN) is Side.ACROSS
    assert side(1 - BETWEEN_RUNS_MARGIN, 1, BETWEEN_RUNS_MARGIN, Question.BETWEEN_RUNS) is Side.WITHIN


def test_with_no_margin_an_interval_is_decided_only_where_it_excludes_one():
    """A rank test declares no margin (decide.stats): 1 itself on an end decides nothing."""
    assert side(1.0, WIDE_ABOVE, 0.0, Question.IN_ONE_RUN) is Side.ACROSS
    assert side(1.0 + TINY, WIDE_ABOVE, 0.0, Question.IN_ONE_RUN) is Side.ABOVE
    assert side(WIDE_BELOW, 1.0, 0.0, Question.IN_ONE_RUN) is Side.ACROSS
    assert side(WIDE_BELOW, 1.0 - TINY, 0.0, Question.IN_ONE_RUN) is Side.BELOW


def test_a_profiles_margin_replaces_the_run_wide_one_kind_by_kind():
    """comparisons.margin and a profile's margin: a number (every kind) or a mapping of kind to
    number with a default (docs/statistics.md; config.schema.yaml's comparisons.margin)."""
    run_wide = {"comparisons": {"margin": {"default": 0.03, "ceiling": 0.05}}}
    assert margin_for(run_wide, None, Kind.CEILING) == 0.05
    assert margin_for(run_wide, None, Kind.FAMILY) == 0.03
    profiles = {
        "number": {"margin": 0.04},
        "mapping": {"margin": {"default": 0.01, "A/A": 0.06}},
        "only a kind": {"margin": {"variant": 0.07}},
        "none": {"margin": None},
    }
    config = {**run_wide, "profiles": profiles}
    assert [margin_for(config, "number", kind) for kind in (Kind.CEILING, Kind.FAMILY)] == [0.04, 0.04]
    assert [margin_for(config, "mapping", kind) for kind in (Kind.AA, Kind.CEILING)] == [0.06, 0.01]
    # A profile mapping without a default leaves its other kinds to the run-wide margin.
    assert [margin_for(config, "only a kind", kind) for kind in (Kind.VARIANT, Kind.CEILING)] == [0.07, 0.05]
    assert margin_for(config, "none", Kind.FAMILY) == 0.03
    # Nothing declared anywhere: the schema's default, 2%.
    assert margin_for({"comparisons": {}}, None, Kind.FAMILY) == 0.02
    assert margin_for({"comparisons": {"margin": {"ceiling": 0.05}}}, None, Kind.FAMILY) == 0.02


def test_every_shipped_comparison_is_read_against_its_documented_margin():
    """config.yaml's margins and the lenses' own, by value, each where the docs state it."""
    config = cfg.load(REPO_ROOT / "config.yaml")
    # docs/statistics.md: comparisons.margin, 2%, in every profile (none of the shipped sets its own).
    for profile in config["profiles"]:
        for kind in Kind:
            assert margin_for(config, profile, kind) == 0.02, (profile, kind)
    assert config["comparisons"]["fairness_margin"] == 0.05  # config.yaml: within ±5% of Jain's index
    assert config["work_lens"]["margin"] == 0.005  # docs/work.md: work_lens.margin (±0.5%)
    assert config["profiles"]["advise"]["advise"]["margin"] == 0.10  # docs/advise.md: advise.margin (10%)
    front = config["profiles"]["front"]["front"]
    assert (front["margin"], front["cost_margin"]) == (0.25, 0.05)  # docs/front.md: ±0.25 and ±5%
    # docs/operations.md: 10% for times, 5% for memory; a difference of half a request per reload.
    operations = {name: (check.scale, check.margin) for name, check in operations_decide.JUDGED.items()}
    assert operations == {
        "cold_start_s": ("ratio", 0.10),
        "idle_uss_mb": ("ratio", 0.05),
        "loaded_uss_mb": ("ratio", 0.05),
        "reload_longest_gap_s": ("ratio", 0.10),
        "reload_failed": ("difference", 0.5),
    }
    # docs/recycle.md: failed requests per second (a difference, 0.1), workers leaving at once (0.5).
    recycle = {name: (check.scale, check.margin) for name, check in recycle_decide.JUDGED.items()}
    assert recycle == {"failed_per_s": ("difference", 0.1), "restarts_at_once": ("difference", 0.5)}
