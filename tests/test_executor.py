"""The workflow through a cluster executor: every cell a self-contained job,
submitted by the cluster-generic executor plugin with a local submit command
(tests/executor/local-submit), as it would be to a batch system."""

import itertools
import json
import os

import pandas as pd
import pytest
from conftest import TINY_MATRIX, require, run_snakemake, server_processes
from serverbench import REPO_ROOT

SUBMIT = REPO_ROOT / "tests" / "executor" / "local-submit"


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory):
    require("gunicorn", "starman", "wrk")
    pytest.importorskip("snakemake_executor_plugin_cluster_generic", reason="needs the cluster-generic plugin")
    base = tmp_path_factory.mktemp("cluster")
    results, submitted = base / "results", base / "submitted.txt"
    before = server_processes()
    # The tables and one chart: every kind of job (cell, collect, chart) goes through the
    # submit command; all charts and the page would only repeat the chart rule.
    targets = [str(results / name) for name in ("runs.csv", "summary.csv", "workers.csv", "charts/rps.png")]
    done = run_snakemake(
        ["--executor", "cluster-generic", "--cluster-generic-submit-cmd", str(SUBMIT), "--jobs", "4",
         "--latency-wait", "30", *targets],
        [*TINY_MATRIX, f"results={results}"],
        env={**os.environ, "SERVERBENCH_SUBMIT_LOG": str(submitted)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return results, submitted, server_processes() - before


def test_every_cell_was_a_submitted_job(cluster_run):
    results, submitted, _ = cluster_run
    jobs = submitted.read_text().splitlines()
    cells = sorted((results / "cells").rglob("r*.json"))
    assert len(cells) == 4
    # 4 cells + collect + the chart, each through the submit command
    assert len(jobs) >= 4 + 2
    for path in cells:
        record = json.loads(path.read_text())
        assert record["status"] == "ok", record["reason"]
    summary = pd.read_csv(results / "summary.csv")
    assert sorted(summary["server"]) == ["gunicorn", "starman"] and set(summary["status"]) == {"ok"}
    assert len(pd.read_csv(results / "runs.csv")) == 4
    assert set(pd.read_csv(results / "workers.csv")["server"]) == {"gunicorn", "starman"}
    assert (results / "charts" / "rps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cells_still_never_overlap(cluster_run):
    """The workflow profile's bench_slot limits the cluster scheduler too."""
    results, _, _ = cluster_run
    runs = pd.read_csv(results / "runs.csv").sort_values("job_start")
    for (_, end), (start, _) in itertools.pairwise(zip(runs["job_start"], runs["job_end"], strict=True)):
        assert start >= end


def test_nothing_left_running(cluster_run):
    _, _, left = cluster_run
    assert not left
