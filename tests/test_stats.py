"""Statistics with known truth, verdicts on the stored result set
(tests/data/records-v1), and ``serverbench compare`` on two result sets."""

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import RECORDS_V1
from scipy import stats as scipy_stats
from serverbench import REPO_ROOT
from serverbench.decide import compare, stats, verdicts
from serverbench.decide.pairs import declared_pairs
from serverbench.plan import config as cfg
from serverbench.record.vocabulary import Outcome
from serverbench.report.answers import answers, console_groups, headline
from serverbench.report.verdicts import verdict_table
from serverbench.tables import estimates

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

CONFIG = cfg.load(REPO_ROOT / "config.yaml")


def sample(rng, median, cv, n):
    return list(median * (1 + cv * rng.standard_normal(n)))


def judged(result):
    return stats.verdict(result.ci_low, result.ci_high, result.p_value, 0.05)


def test_identical_distributions_show_no_difference_in_95_percent_of_seeds():
    verdicts_seen = []
    for seed in range(400):
        rng = np.random.default_rng(seed)
        verdicts_seen.append(
            judged(stats.compare(sample(rng, 1000, 0.03, 10), sample(rng, 1000, 0.03, 10), 0.95, seed))
        )
    assert verdicts_seen.count(Outcome.UNDETERMINED) >= 0.95 * 400


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


def test_median_interval_is_exact_or_none():
    # Seven repeats: the 1st and 7th order statistics cover the median with 98.4% (≥ 95%).
    low, high = estimates.median_ci([980, 1000, 1010, 1020, 990, 1005, 995], 0.95, 1)
    assert (low, high) == (980, 1020)
    # Five repeats cannot cover a median at 95% (at most 93.75%): no interval rather than a narrow one.
    assert estimates.median_ci([980, 1000, 1010, 1020, 990], 0.95, 1) == (None, None)
    assert estimates.median_ci([1000], 0.95, 1) == (None, None)


# Verdicts on the stored default matrix: starved cells decide nothing.


@pytest.fixture(scope="module")
def stored_verdicts():
    runs, summary = (pd.read_csv(RECORDS_V1 / f"{name}.csv") for name in ("runs", "summary"))
    return verdict_table(runs, summary, CONFIG)


def test_a_starved_cell_is_not_comparable_and_says_why(stored_verdicts):
    row = stored_verdicts[
        (stored_verdicts["kind"] == "family")
        & (stored_verdicts["tool"] == "wrk")
        & (stored_verdicts["concurrency"] == 100)
        & (stored_verdicts["a"] == "gunicorn")
    ].iloc[0]
    assert row["b"] == "starman" and row["outcome"] == "not comparable"
    assert "starman: starved: 98 of 100 connections" in row["why"]


def test_best_of_language_is_chosen_among_comparable_cells_only(stored_verdicts):
    best = stored_verdicts[stored_verdicts["kind"] == "best of language"]
    assert len(best) == 4  # one per condition
    # uWSGI (starved under wrk) and Starman (starved everywhere) never stand for their language.
    wrk = best[best["tool"] == "wrk"]
    assert set(wrk["a"]) == {"gunicorn"} and set(wrk["b"]) == {"plackup"}
    assert all("left out: " in why and "starman (starved" in why for why in wrk["why"])
    assert set(best["b"]) == {"plackup"}


def log_rps_by_round(runs: pd.DataFrame, row: pd.Series, server: str) -> pd.Series:
    """One server's log req/s in the comparison's condition, by round, from runs.csv."""
    cells = runs[
        (runs["status"] == "ok")
        & (runs["server"] == server)
        & (runs["workload"] == row["workload"])
        & (runs["tool"] == row["tool"])
        & (runs["concurrency"] == row["concurrency"])
    ]
    return np.log(cells.set_index("repeat")["rps"].sort_index())


def test_three_rounds_decide_only_beyond_the_margin_and_say_what_they_could_have_told(stored_verdicts):
    # The stored matrix's family pairs all meet a starved Starman: name two pairs that can be tested.
    pairs = [["gunicorn", "plackup"], ["uwsgi", "plackup"]]
    named = {**CONFIG, "comparisons": {**CONFIG["comparisons"], "pairs": pairs}}
    runs, summary = (pd.read_csv(RECORDS_V1 / f"{name}.csv") for name in ("runs", "summary"))
    with_pairs = verdict_table(runs, summary, named)
    # req/s tests; the starved family pairs are compared on fairness instead (tests of their own).
    tested = with_pairs[with_pairs["p_holm"].notna() & (with_pairs["kind"] != "fairness")]
    assert len(tested) == 6 and (tested["method"] == "rounds model").all()
    fairness = with_pairs[with_pairs["kind"] == "fairness"]
    assert set(fairness["b"]) == {"starman"} and fairness["p_holm"].notna().all()
    # Each figure worked out apart from the code: two servers' rounds model is the paired t-test
    # of their log req/s, round by round (SciPy's), its interval taken at the row's Holm level.
    for _, row in tested.iterrows():
        log_a, log_b = (log_rps_by_round(runs, row, server) for server in (row["a"], row["b"]))
        paired = scipy_stats.ttest_rel(log_a, log_b)
        interval = paired.confidence_interval(1 - row["level"])
        assert row["p_value"] == pytest.approx(paired.pvalue, rel=1e-9)
        assert row["ratio"] == pytest.approx(np.exp((log_a - log_b).mean()), rel=1e-9)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((np.exp(interval.low), np.exp(interval.high)), rel=1e-9)
    # Every kind here is read against config.yaml's comparisons.margin, 2%: the band of two servers
    # of one run is [1/1.02, 1.02] (docs/architecture.md, decide/margins), written here by hand.
    assert (tested["margin"] == 0.02).all()
    lower, upper = 1 / 1.02, 1.02
    assert (tested["detectable_ratio"] > upper).all()
    faster, slower = tested[tested["outcome"] == "faster"], tested[tested["outcome"] == "slower"]
    assert (faster["ci_low"] > upper).all() and len(faster) + len(slower)
    assert (slower["ci_high"] < lower).all()
    undetermined = tested[tested["outcome"] == "undetermined"]
    assert len(undetermined) and all("could have told a ratio beyond" in text for text in undetermined["sentence"])
    # Each interval is at the level Holm asked of its step (alpha / its rank), not a flat 95%.
    assert (tested["level"] < 0.05).all()
    best = stored_verdicts[(stored_verdicts["kind"] == "best of language") & stored_verdicts["ratio"].notna()]
    assert set(best["outcome"]) == {"not tested"} and best["p_holm"].isna().all()
    assert all(why.startswith("described, not tested") for why in best["why"])


def test_a_named_pair_and_the_ceiling_are_compared_when_declared():
    config = {**CONFIG, "comparisons": {**CONFIG["comparisons"], "pairs": [["uwsgi", "plackup"]]}}
    assert ("named", "uwsgi", "plackup") in declared_pairs(config, ["plackup", "uwsgi"])
    pairs = declared_pairs(CONFIG, ["gunicorn", "nginx-baseline", "uwsgi-psgi", "uwsgi"])
    assert ("same server", "uwsgi", "uwsgi-psgi") in pairs and ("ceiling", "gunicorn", "nginx-baseline") in pairs


# serverbench compare: a result set against a changed copy of it.


SERVERS = {
    "nginx-baseline": ("none", 40000),
    "gunicorn": ("python", 4000),
    "uwsgi": ("python", 20000),
    "starman": ("perl", 9000),
    "plackup": ("perl", 2500),
}


def result_set(path, factor=1.0, kernel="6.1", repeats=10, seed=0):
    """Five cells (the ceiling and four servers) of ten repeats at 2% spread; gunicorn's req/s times ``factor``."""
    rng = np.random.default_rng(seed)
    rows = []
    for server, (language, base) in SERVERS.items():
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
        [
            sys.executable,
            "-c",
            "import sys; from serverbench.cli import main; sys.exit(main())",
            "compare",
            *map(str, args),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_compare_finds_a_regression_and_fails_above_the_threshold(tmp_path):
    before = result_set(tmp_path / "before")
    after = result_set(tmp_path / "after", factor=0.8, kernel="6.12", seed=1)
    done = run_compare(before, after, "--across-hosts")
    assert done.returncode == 0, done.stderr
    assert "Environments differ:" in done.stdout and "kernel: A '6.1', B '6.12'" in done.stdout
    table = pd.read_csv(
        __import__("io").StringIO(run_compare(before, after, "--across-hosts", "--format", "csv").stdout)
    )
    table = table.set_index("server")
    assert table.loc["gunicorn", "outcome"] == "slower" and table.loc["gunicorn", "reference"] == "nginx-baseline"
    # Ten repeats against four other cells: the others are never called changed, and the one
    # change does not widen their intervals (the run-to-run spread is robust to it).
    assert set(table.drop(index="gunicorn")["outcome"]) <= {"equivalent", "undetermined"}
    assert (table.drop(index="gunicorn")["ci_high"] - table.drop(index="gunicorn")["ci_low"] < 0.3).all()
    assert table.loc["gunicorn", "ratio"] == pytest.approx(0.8, rel=0.03)
    failing = run_compare(before, after, "--across-hosts", "--fail-above", "5%")
    assert failing.returncode == 1 and "shown slower by more than 5%" in failing.stderr
    passing = run_compare(before, after, "--across-hosts", "--fail-above", "30%")
    assert passing.returncode == 0, passing.stderr
    markdown = run_compare(before, after, "--across-hosts", "--format", "markdown").stdout
    # A pipe table (tabulate's, through pandas): header, rule, a row per cell, "slower" among them.
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")] for line in markdown.splitlines() if line.startswith("|")
    ]
    assert rows[0][:2] == ["profile", "workload"] and set("".join(rows[1])) <= set("-: ")
    assert ["slower"] == [row[rows[0].index("outcome")] for row in rows[2:] if row[3] == "gunicorn"]


def test_compare_refuses_runs_from_different_hosts_unless_asked(tmp_path):
    """A different kernel or CPU model is a different condition: named, exit 3, not silently compared."""
    before = result_set(tmp_path / "before")
    after = result_set(tmp_path / "after", kernel="6.12", seed=1)
    done = run_compare(before, after, "--fail-above", "5%")
    assert done.returncode == 3 and "different hosts" in done.stderr and "kernel: A '6.1', B '6.12'" in done.stderr
    assert run_compare(before, after, "--across-hosts", "--fail-above", "30%").returncode == 0


def test_compare_says_when_two_runs_cannot_tell(tmp_path):
    """Two servers and no ceiling: nothing in the runs measures their drift, so a 10% one is assumed."""
    before, after = result_set(tmp_path / "before"), result_set(tmp_path / "after", factor=0.97, seed=1)
    for path in (before, after):
        runs = pd.read_csv(path / "runs.csv")
        runs[runs["server"].isin(["gunicorn", "starman"])].to_csv(path / "runs.csv", index=False)
    done = run_compare(before, after, "--fail-above", "5%")
    assert done.returncode == 3, done.stderr
    assert "cannot tell whether" in done.stderr and "the drop each could have shown: gunicorn c=10:" in done.stderr


def test_compare_leaves_flagged_cells_undecided(tmp_path):
    before = result_set(tmp_path / "before")
    after = result_set(tmp_path / "after", factor=0.5, seed=1)
    summary = pd.read_csv(after / "summary.csv", dtype={"flags": str})
    summary.loc[summary["server"] == "gunicorn", "flags"] = "starved"
    summary.to_csv(after / "summary.csv", index=False)
    table = compare.compare_sets(compare.read_set(before), compare.read_set(after), CONFIG)
    row = table.set_index("server").loc["gunicorn"]
    assert row["outcome"] == "not comparable" and row["why"] == "B: starved"
    # Halved but starved: not a regression shown (exit 1). The others' seeded samples leave three
    # cells that could not have shown a 5% drop: exit 3, naming them and not gunicorn.
    done = run_compare(before, after, "--fail-above", "5%")
    assert done.returncode == 3, done.stderr
    assert "cannot tell whether 3 cell(s) stayed within 5%" in done.stderr and "gunicorn" not in done.stderr


def test_the_command_is_installed():
    done = subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "serverbench")], capture_output=True, text=True)
    assert done.returncode == 2 and "compare" in done.stderr and "seeds" in done.stderr
    # Each command's usage is argparse's: every option named (a hand-written one left three out).
    shown = subprocess.run(
        [str(REPO_ROOT / ".venv" / "bin" / "serverbench"), "compare", "--help"], capture_output=True, text=True
    )
    options = ("--metric", "--format", "--fail-above", "--config", "--normalise", "--across-hosts")
    assert shown.returncode == 0 and all(option in shown.stdout for option in options), shown.stdout


def test_a_run_without_comparisons_still_has_answers(tmp_path):
    """One server, or servers with nothing declared between them: an empty verdicts.csv."""
    path = tmp_path / "verdicts.csv"
    pd.DataFrame(columns=verdicts.VERDICT_COLUMNS).to_csv(path, index=False)
    assert answers(pd.read_csv(path)) == {
        "decided": [],
        "equivalent": [],
        "undetermined": [],
        "described, not tested": [],
        "not comparable": [],
        "not measured": [],
        "connections kept waiting": [],
        "latency under load": [],
    }  # the HTTP lens's sentences are its section's (lenses/http), no longer the core's answers


def _language_row(kind, concurrency, a, b, ratio, verdict, why="", detectable=1.4):
    return {
        "kind": kind,
        "tool": "wrk",
        "concurrency": concurrency,
        "a": a,
        "b": b,
        "language_a": "python",
        "language_b": "perl",
        "ratio": ratio,
        "ci_low": ratio / 1.2,
        "ci_high": ratio * 1.2,
        "level": 0.01 if kind == "same server" else 0.05,
        "margin": 0.05,
        "detectable_ratio": detectable if kind == "same server" else float("nan"),
        "outcome": verdict,
        "why": why,
    }


def test_the_headline_is_one_paragraph_answering_which_language_and_which_server():
    """Per condition: what the same program serving both languages shows (tested), then which
    server led each language (described), with who was left out and why, in the config's titles."""
    rows = pd.DataFrame(
        [
            _language_row("same server", 2, "unit-python", "unit-perl", 1.00, "undetermined", detectable=1.39),
            _language_row("same server", 2, "uwsgi", "uwsgi-psgi", 0.97, "undetermined", detectable=1.55),
            _language_row("best of language", 2, "uwsgi", "uwsgi-psgi", 0.97, "not tested", "described, not tested"),
            _language_row("same server", 20, "unit-python", "unit-perl", 1.30, "faster"),
            {
                **_language_row(
                    "best of language",
                    20,
                    "unit-python",
                    "unit-perl",
                    1.30,
                    "not tested",
                    "described, not tested; left out: uwsgi (starved: 18 of 20 connections got (almost) no answer), "
                    "starman (failed: 3 of 3 repeats)",
                ),
                "left_out": '[["uwsgi", "starved"], ["starman", "failed"]]',
            },  # read from this field, not from "why"
            _language_row("family", 2, "gunicorn", "starman", 0.3, "slower"),
        ]
    )
    text = headline(rows, {"python": "Python", "perl": "Perl"})
    assert "\n" not in text and text.count("With wrk at ") == 2
    at_2, at_20 = text.split("With wrk at ")[1:]
    assert at_2.startswith("2 connections, on the same server this run cannot tell Python from Perl")
    assert "could have told a ratio beyond 1.39×" in at_2  # the finer of the two
    assert "unit-python/unit-perl 1.00× (99% CI 0.83–1.20), uwsgi/uwsgi-psgi 0.97×" in at_2
    assert (
        "the fastest Python server was uwsgi and the fastest Perl server uwsgi-psgi, uwsgi at 0.97× uwsgi-psgi's"
        " requests per second (described, not tested)" in at_2
    )
    assert "unit-python serves Python faster than Perl" in at_20
    assert at_20.endswith("(described, not tested; left out: uwsgi (starved), starman (failed)).")
    assert "gunicorn" not in text  # families answer other questions
    # Mixed outcomes on the same server: each outcome once, naming the servers that gave it.
    rows.loc[0, "outcome"] = "equivalent"
    mixed = headline(rows, {"python": "Python", "perl": "Perl"}).split("With wrk at ")[1]
    assert mixed.startswith(
        "2 connections, on the same server Python and Perl are equivalent within ±5% on unit-python/unit-perl; "
        "this run cannot tell Python from Perl on uwsgi/uwsgi-psgi (it could have told a ratio beyond 1.55×): "
    )
    # Two workloads: each answers on its own, named (the best of each is not one workload's alone).
    rows = rows.assign(workload="hello")
    json_rows = rows.iloc[:3].assign(workload="json", a=["unit-python", "uwsgi", "unit-python"])
    two = headline(pd.concat([rows, json_rows], ignore_index=True), {"python": "Python", "perl": "Perl"})
    assert two.count("With wrk at 2 connections (") == 2 and "With wrk at 20 connections (hello), " in two
    at_json = two.split("With wrk at 2 connections (json), ")[1]
    assert "the fastest Python server was unit-python" in at_json.split("With wrk at")[0]


def test_a_round_whose_cells_ran_on_different_hosts_is_refused():
    """A comparison pairs its cells round by round so that a machine's level cancels; where a
    round's two cells ran on different machines (a cluster placing cells freely) it refuses, and
    names the round and the hosts. Rounds on one host each, however many hosts, are compared."""
    rounds = pd.Index([1, 2, 3, 4], name="repeat")
    a = verdicts.CellRounds("a", "python", 2, pd.Series([100.0, 101, 99, 100], index=rounds))
    b = verdicts.CellRounds("b", "perl", 2, pd.Series([90.0, 91, 89, 90], index=rounds))
    a.hosts = pd.Series(["n1 (boot 1)", "n2 (boot 2)", "n1 (boot 1)", "n2 (boot 2)"], index=rounds)
    b.hosts = pd.Series(["n1 (boot 1)", "n2 (boot 2)", "n1 (boot 1)", "n2 (boot 2)"], index=rounds)
    assert verdicts.estimate_pair("family", ("default", "hello", "wrk", 2), a, b).comparison.outcome != "not comparable"
    b.hosts = pd.Series(["n1 (boot 1)", "n1 (boot 1)", "n1 (boot 1)", "n1 (boot 1)"], index=rounds)
    judged = verdicts.estimate_pair("family", ("default", "hello", "wrk", 2), a, b).comparison
    assert judged.outcome == "not comparable"
    assert {reason.code for reason in judged.reasons} == {verdicts.SPLIT_OVER_HOSTS}
    assert judged.why.startswith("round 2: a ran on n2 (boot 2), b on n1 (boot 1) (a round's cells must share")
    assert judged.why.endswith("and 1 more rounds split so")


def test_the_terminal_names_each_condition_once_then_a_line_per_comparison():
    """hyperfine's summary: the condition as a header, then each comparison's ratio, interval,
    counterpart, kind and outcome on one line; what an undetermined one could have told and how
    many rounds would decide it; latency rows and rows without an interval stay sentences."""
    where = {"profile": "default", "workload": "hello", "tool": "wrk"}
    rows = [
        {
            **where,
            "concurrency": 2,
            "kind": "same server",
            "a": "unit-python",
            "b": "unit-perl",
            "ratio": 0.94,
            "ci_low": 0.49,
            "ci_high": 1.80,
            "outcome": "undetermined",
            "detectable_ratio": 2.25,
            "rounds_needed": 31,
        },
        {
            **where,
            "concurrency": 2,
            "kind": "ceiling",
            "a": "starman",
            "b": "nginx-baseline",
            "ratio": 0.14,
            "ci_low": 0.10,
            "ci_high": 0.20,
            "outcome": "slower",
        },
        {
            **where,
            "concurrency": 20,
            "kind": "fairness",
            "a": "starman",
            "b": "nginx-baseline",
            "ratio": 0.10,
            "ci_low": 0.09,
            "ci_high": 0.11,
            "outcome": "less fair",
        },
        {
            **where,
            "concurrency": 20,
            "kind": "family",
            "a": "gunicorn",
            "b": "starman",
            "outcome": "not comparable",
            "why": "starman: failed",
        },
    ]
    groups = console_groups(pd.DataFrame(rows, columns=verdicts.VERDICT_COLUMNS))
    assert groups == {
        "default, hello, wrk at 2 connections": [
            "starman: 0.14× [0.10–0.20] against nginx-baseline (ceiling) — slower",
            "unit-python: 0.94× [0.49–1.80] against unit-perl (same server) — undetermined (could tell 2.25×;"
            " about 31 rounds would decide it)",
        ],
        "default, hello, wrk at 20 connections": [
            "starman: 0.10× [0.09–0.11] as evenly as nginx-baseline (fairness) — less fair"
        ],
    }


def test_a_server_not_measured_is_named_once_from_the_rows_fields():
    """A skipped cell makes its comparisons not comparable with the fact in fields (who, why, and
    whether that was the only reason); the Answers name it once under "not measured" from those
    fields, and keep a comparison with another reason too under "not comparable"."""
    from serverbench.decide.judgement import Reason

    rounds = pd.Index([1, 2, 3], name="repeat")
    ok = verdicts.CellRounds("gunicorn", "python", 2, pd.Series([100.0, 101, 99], index=rounds))
    skipped = verdicts.CellRounds("meinheld", "python", 2, pd.Series(dtype=float))
    skipped.why_not = [Reason("skipped", "skipped: server program 'meinheld' not found on PATH")]
    skipped.not_measured = "server program 'meinheld' not found on PATH"
    failed = verdicts.CellRounds("starman", "perl", 2, pd.Series(dtype=float), [Reason("failed", "failed: crashed")])
    condition = ("default", "hello", "wrk", 2)
    only = verdicts.estimate_pair("family", condition, ok, skipped).comparison
    assert only.only_not_measured is True
    assert only.not_measured == (("meinheld", "server program 'meinheld' not found on PATH"),)
    both = verdicts.estimate_pair("named", condition, failed, skipped).comparison
    assert both.only_not_measured is False and both.not_measured[0][0] == "meinheld"
    # As a CSV row: the facts as JSON, read back by the Answers.
    only, both = only.as_row(), both.as_row()
    assert json.loads(only["not_measured"]) == [["meinheld", "server program 'meinheld' not found on PATH"]]
    table = pd.read_csv(io.StringIO(pd.DataFrame([only, both], columns=verdicts.VERDICT_COLUMNS).to_csv(index=False)))
    found = answers(table)
    assert found["not measured"] == ["meinheld (server program 'meinheld' not found on PATH)"]
    assert len(found["not comparable"]) == 2 and all(
        "starman against meinheld" in line for line in found["not comparable"]
    )
