"""Statistics with known truth, verdicts on the stored result set
(tests/data/records-v1), and ``serverbench compare`` on two result sets."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import RECORDS_V1
from serverbench import REPO_ROOT
from serverbench.decide import compare, stats, verdicts
from serverbench.decide.pairs import declared_pairs
from serverbench.plan import config as cfg
from serverbench.report.answers import answers
from serverbench.tables import estimates

CONFIG = cfg.load(REPO_ROOT / "config.yaml")


def sample(rng, median, cv, n):
    return list(median * (1 + cv * rng.standard_normal(n)))


def judged(result):
    return stats.verdict(result.ratio, result.ci_low, result.ci_high, result.p_value, 0.05)


def test_identical_distributions_show_no_difference_in_95_percent_of_seeds():
    verdicts_seen = []
    for seed in range(400):
        rng = np.random.default_rng(seed)
        verdicts_seen.append(
            judged(stats.compare(sample(rng, 1000, 0.03, 10), sample(rng, 1000, 0.03, 10), 0.95, seed))
        )
    assert verdicts_seen.count("no detectable difference") >= 0.95 * 400


def test_a_ten_percent_shift_at_three_percent_cv_is_detected_with_ten_repeats():
    detected = 0
    for seed in range(50):
        rng = np.random.default_rng(seed)
        result = stats.compare(sample(rng, 1100, 0.03, 10), sample(rng, 1000, 0.03, 10), 0.95, seed)
        detected += judged(result) == "faster"
        assert result.ratio == pytest.approx(1.1, rel=0.05)
    assert detected == 50


def test_holm_turns_a_borderline_difference_into_none_when_many_pairs_are_tested():
    assert stats.holm([0.01]) == [0.01]
    adjusted = stats.holm([0.01] + [0.5] * 9)
    assert adjusted[0] == pytest.approx(0.1)
    assert stats.holm([0.01, None]) == [0.01, None]


def test_three_against_three_repeats_can_never_be_significant():
    assert stats.smallest_p(3, 3) == pytest.approx(0.1)
    assert stats.smallest_p(5, 5) < 0.01


def test_median_interval_covers_the_median():
    low, high = estimates.median_ci([980, 1000, 1010, 1020, 990], 0.95, 1)
    assert low <= 1000 <= high
    assert estimates.median_ci([1000], 0.95, 1) == (None, None)


# Verdicts on the stored default matrix: starved cells decide nothing.


@pytest.fixture(scope="module")
def stored_verdicts():
    runs, summary = (pd.read_csv(RECORDS_V1 / f"{name}.csv") for name in ("runs", "summary"))
    return verdicts.verdict_table(runs, summary, CONFIG)


def test_a_starved_cell_is_not_comparable_and_says_why(stored_verdicts):
    row = stored_verdicts[
        (stored_verdicts["kind"] == "family") & (stored_verdicts["tool"] == "wrk")
        & (stored_verdicts["concurrency"] == 100) & (stored_verdicts["a"] == "gunicorn")
    ].iloc[0]  # fmt: skip
    assert row["b"] == "starman" and row["verdict"] == "not comparable"
    assert "starman: starved: 98 of 100 connections" in row["why"]


def test_best_of_language_is_chosen_among_comparable_cells_only(stored_verdicts):
    best = stored_verdicts[stored_verdicts["kind"] == "best of language"]
    assert len(best) == 4  # one per condition
    # uWSGI (starved under wrk) and Starman (starved everywhere) never stand for their language.
    wrk = best[best["tool"] == "wrk"]
    assert set(wrk["a"]) == {"gunicorn"} and set(wrk["b"]) == {"plackup"}
    assert all("left out: " in why and "starman (starved" in why for why in wrk["why"])
    assert set(best["b"]) == {"plackup"}


def test_few_repeats_say_so_instead_of_deciding(stored_verdicts):
    comparable = stored_verdicts[stored_verdicts["verdict"] != "not comparable"]
    assert set(comparable["verdict"]) == {"no detectable difference"}
    assert all("3 against 3 repeats cannot show a difference" in why for why in comparable["why"])


def test_a_named_pair_and_the_ceiling_are_compared_when_declared():
    config = {**CONFIG, "comparisons": {**CONFIG["comparisons"], "pairs": [["uwsgi", "plackup"]]}}
    assert ("named", "uwsgi", "plackup") in declared_pairs(config, ["plackup", "uwsgi"])
    pairs = declared_pairs(CONFIG, ["gunicorn", "nginx-baseline", "uwsgi-psgi", "uwsgi"])
    assert ("same server", "uwsgi", "uwsgi-psgi") in pairs and ("ceiling", "gunicorn", "nginx-baseline") in pairs


# serverbench compare: a result set against a changed copy of it.


def result_set(path, factor=1.0, kernel="6.1", repeats=10, seed=0):
    """Two cells (gunicorn, starman) of ten repeats; gunicorn's req/s times ``factor``."""
    rng = np.random.default_rng(seed)
    rows = []
    for server, language, base in (("gunicorn", "python", 4000), ("starman", "perl", 9000)):
        scale = factor if server == "gunicorn" else 1.0
        for repeat, rps in enumerate(sample(rng, base * scale, 0.02, repeats), start=1):
            cell = {"profile": "default", "workload": "hello", "tool": "wrk", "server": server, "concurrency": 10}
            rows.append({**cell, "language": language, "repeat": repeat, "status": "ok", "rps": rps})
    path.mkdir()
    pd.DataFrame(rows).to_csv(path / "runs.csv", index=False)
    summary = (
        pd.DataFrame(rows)
        .drop_duplicates(compare.MATCH)[compare.MATCH]
        .assign(status="ok", reason=None, flags="", repeats_ok=repeats)
    )
    summary.to_csv(path / "summary.csv", index=False)
    (path / "environment.json").write_text(json.dumps({"kernel": kernel, "versions": {"server:gunicorn": "27"}}))
    return path


def run_compare(*args):
    return subprocess.run(
        [sys.executable, "-c", "import sys; from serverbench.cli import main; sys.exit(main())", "compare",
         *map(str, args)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_compare_finds_a_regression_and_fails_above_the_threshold(tmp_path):
    before = result_set(tmp_path / "before")
    after = result_set(tmp_path / "after", factor=0.8, kernel="6.12", seed=1)
    done = run_compare(before, after)
    assert done.returncode == 0, done.stderr
    assert "Environments differ:" in done.stdout and "kernel: A '6.1', B '6.12'" in done.stdout
    table = pd.read_csv(__import__("io").StringIO(run_compare(before, after, "--format", "csv").stdout))
    verdict = table.set_index("server")["verdict"].to_dict()
    assert verdict == {"gunicorn": "slower", "starman": "no detectable difference"}
    assert table.set_index("server").loc["gunicorn", "ratio"] == pytest.approx(0.8, rel=0.03)
    failing = run_compare(before, after, "--fail-above", "5%")
    assert failing.returncode == 1 and "slower by more than 5%" in failing.stderr
    assert run_compare(before, after, "--fail-above", "30%").returncode == 0
    markdown = run_compare(before, after, "--format", "markdown").stdout
    assert "| profile | workload |" in markdown and "| slower |" in markdown


def test_compare_leaves_flagged_cells_undecided(tmp_path):
    before = result_set(tmp_path / "before")
    after = result_set(tmp_path / "after", factor=0.5, seed=1)
    summary = pd.read_csv(after / "summary.csv", dtype={"flags": str})
    summary.loc[summary["server"] == "gunicorn", "flags"] = "starved"
    summary.to_csv(after / "summary.csv", index=False)
    table = compare.compare_sets(compare.read_set(before), compare.read_set(after), {"starved"}, 0.95, 0)
    row = table.set_index("server").loc["gunicorn"]
    assert row["verdict"] == "not comparable" and row["why"] == "B: starved"
    assert run_compare(before, after, "--fail-above", "5%").returncode == 0


def test_the_command_is_installed():
    done = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "serverbench")], capture_output=True, text=True)
    assert done.returncode == 2 and "serverbench compare A B" in done.stderr


def test_a_run_without_comparisons_still_has_answers(tmp_path):
    """One server, or servers with nothing declared between them: an empty verdicts.csv."""
    path = tmp_path / "verdicts.csv"
    pd.DataFrame(columns=verdicts.VERDICT_COLUMNS).to_csv(path, index=False)
    assert answers(pd.read_csv(path)) == {
        "decided": [], "no detectable difference": [], "not comparable": [], "not measured": [],
        "latency under load": [], "speaks HTTP differently": [],
    }  # fmt: skip
