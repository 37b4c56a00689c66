"""``serverbench compare`` as a user runs it, on real workflow output: a tiny default run
(gunicorn-gthread and its A/A twin, work counted), and three more of its work: the same
commit again, one with 3% of the hello's cost planted in gunicorn-gthread
(tests/data/planted-3pct-gunicorn.yaml: a catalogue entry of one's own, in place of the
shipped one), one counted with two workers. Exit statuses, each from real runs: 0 shown
within, 1 shown worse, 3 cannot tell (a condition differs), 2 a usage error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from conftest import require, run_snakemake
from serverbench import REPO_ROOT

# Paired, not alone: its verdicts are on work per request (counted, not timed) and on speed only a run
# against itself, which reads the same on a busy machine as on an idle one.
pytestmark = pytest.mark.e2e
SHORT_LIVES = ["--configfile", "config.yaml", str(REPO_ROOT / "tests/data/short-work-lives.yaml")]
PLANTED = str(REPO_ROOT / "tests/data/planted-3pct-gunicorn.yaml")
MATRIX = [
    "servers=[gunicorn-gthread, gunicorn-gthread-again]",
    "tools=[wrk]",
    "concurrency=[2]",
    "repeats=3",
    "duration=1",
]

BEFORE_TABLES = ["runs.csv", "summary.csv", "verdicts.csv", "environment.json", "work.csv"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    require("gunicorn", "wrk", "valgrind", "perf")
    base = tmp_path_factory.mktemp("compare")
    two_workers = base / "two-workers.yaml"
    two_workers.write_text("work_lens: {workers: 2}\n")
    runs = {}
    # Only the tables compare reads (the charts and the page are tested elsewhere); the other
    # runs only gunicorn-gthread's work (the planted one's too: its twin is not planted):
    # speed is compared on the first run alone.
    alone = ["servers=[gunicorn-gthread]"]
    plans = {
        "before": (BEFORE_TABLES, [], []),
        "again": (["work.csv"], [], alone),
        "after": (["work.csv"], [PLANTED], alone),
        "two workers": (["work.csv"], [str(two_workers)], alone),
    }
    for name, (tables, extra, matrix) in plans.items():
        results = base / name.replace(" ", "-")
        targets = [str(results / table) for table in tables]
        done = run_snakemake(
            ["--cores", "4", *targets, *SHORT_LIVES, *extra],
            [*MATRIX, *matrix, f"results={results}"],
            work=True,
            host_check=True,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs[name] = results
    return runs


def compare(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "serverbench.cli", "compare", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )


def test_work_the_same_commit_again_is_within_and_the_planted_three_percent_is_worse(two_runs):
    before, after = two_runs["before"], two_runs["after"]
    same = compare(before, two_runs["again"], "--fail-above", "1%")  # as docs/statistics.md's recipe
    assert same.returncode == 0, same.stdout + same.stderr
    first = same.stderr.splitlines()[0]
    assert first.startswith("serverbench compare: judging by work per request: both runs counted it"), first
    assert "every server shown within 1.0%" in same.stderr
    planted = compare(before, after, "--metric", "work", "--fail-above", "1%")
    assert planted.returncode == 1, planted.stdout + planted.stderr
    assert "gunicorn-gthread " in planted.stderr and "more work per request" in planted.stderr
    table = pd.read_csv(
        __import__("io").StringIO(compare(before, after, "--metric", "work", "--format", "csv").stdout)
    ).set_index("server")
    assert table.loc["gunicorn-gthread", "outcome"] == "more work"
    assert 1.02 < table.loc["gunicorn-gthread", "ratio"] < 1.04  # 3% planted, counted not timed


def test_work_a_condition_that_differs_cannot_be_compared(two_runs, tmp_path):
    """A run counted with other workers (a real run) or on another CPU model (glibc picks its
    string functions by CPU: this host has one, so its work.csv is edited) is not compared:
    the servers are named with the difference, exit 3."""
    before = two_runs["before"]
    done = compare(before, two_runs["two workers"], "--metric", "work", "--fail-above", "1%")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "workers: A" in done.stderr and "cannot tell for 1 server(s)" in done.stderr
    for column, value in (("cpu_model", "Another CPU"),):
        other = tmp_path / column
        shutil.copytree(before, other)
        work = pd.read_csv(other / "work.csv")
        work[column] = value
        work.to_csv(other / "work.csv", index=False)
        done = compare(before, other, "--metric", "work", "--fail-above", "1%")
        assert done.returncode == 3, done.stderr
        assert f"{column}: A" in done.stderr and "cannot tell for 2 server(s)" in done.stderr


def test_json_and_what_a_ci_job_does_when_the_runs_cannot_tell(two_runs):
    """--format json carries the metric, the status and its reason with the rows; --inconclusive
    turns "cannot tell" (exit 3) into the CI job's choice, and says so."""
    before = two_runs["before"]
    done = compare(before, two_runs["after"], "--fail-above", "1%", "--format", "json")
    found = json.loads(done.stdout)
    assert done.returncode == found["status"] == 1 and found["metric"] == "work"
    assert {row["server"]: row["outcome"] for row in found["rows"]}["gunicorn-gthread"] == "more work"
    unsure = [before, two_runs["two workers"], "--fail-above", "1%"]
    assert compare(*unsure).returncode == 3
    for choice, status in (("pass", 0), ("fail", 1)):
        done = compare(*unsure, "--inconclusive", choice)
        assert done.returncode == status and f"--inconclusive {choice}: exit {status}" in done.stderr


def planted_speeds(before, to, slowed: float = 1.0):
    """A copy of a run whose timed cells read steady planted speeds (every full-speed window
    2,000 req/s, 0.1% apart a window; gunicorn-gthread's times ``slowed``): what the machine's
    noise does to a real run's interval is not what this tests."""
    shutil.copytree(before, to)
    for table, column in (("windows.csv", "window"), ("runs.csv", "repeat")):
        rows = pd.read_csv(to / table)
        factor = rows["server"].map(lambda server: slowed if server == "gunicorn-gthread" else 1.0)
        rows["rps"] = 2000.0 * (1 + 0.001 * (rows[column] % 7)) * factor
        if "answers" in rows:
            rows["answers"] = rows["rps"] * rows["duration_s"]
        rows.to_csv(to / table, index=False)
    return to


def test_speed_the_same_run_and_the_controls_lines(two_runs, tmp_path):
    """On speed a run against itself reads exactly 1× for every server; steady planted speeds
    are shown within 50% (two runs of two servers: the run-to-run spread is the assumed one,
    about ±25%), and gunicorn-gthread's halved shown slower by more than 5%; the A/A control
    of each run is shown before the table."""
    before = two_runs["before"]
    table = pd.read_csv(
        __import__("io").StringIO(compare(before, before, "--metric", "speed", "--format", "csv").stdout)
    )
    assert len(table) and (table["ratio"] == 1.0).all(), table
    steady = planted_speeds(before, tmp_path / "steady")
    done = compare(steady, steady, "--metric", "speed", "--fail-above", "50%")
    assert done.returncode == 0, done.stderr
    assert "A/A control (the same server twice in one run):" in done.stdout
    assert "gunicorn-gthread-again" in done.stdout.split("A/A control")[1]
    halved = planted_speeds(before, tmp_path / "halved", slowed=0.5)
    done = compare(steady, halved, "--metric", "speed", "--fail-above", "5%")
    assert done.returncode == 1 and "shown slower by more than 5%" in done.stderr, done.stderr
    # Without full-speed windows (an untimed tool), three repeats against three: their rank
    # interval at 95% is unbounded, so the runs cannot tell (it once raised a math domain error).
    for run in (steady, halved):
        (run / "windows.csv").unlink()
    done = compare(steady, halved, "--metric", "speed", "--fail-above", "5%")
    assert done.returncode == 3 and "gunicorn-gthread c=2: 100%" in done.stderr, done.stderr


def test_a_missing_table_is_a_usage_error(two_runs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = compare(two_runs["before"], empty, "--metric", "work")
    assert done.returncode == 2 and "needs results/work.csv in both runs" in done.stderr
    done = compare(two_runs["before"], empty, "--metric", "speed")
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
