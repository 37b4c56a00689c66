"""Faults: every failure is a recorded result, nothing is lost, nothing is left
running. Real processes throughout."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest
from conftest import add_server, measure_cell, require, server_processes
from serverbench import REPO_ROOT
from serverbench.cell import servers

SINGLE = ["python", "{root}/tests/apps/single.py", "{port}"]


def test_server_that_stops_answering_is_failed_not_clean(base_config, tmp_path, no_leftovers):
    """wrk's "0 requests in 1.00s" is no measurement: no latency, no clean error rate."""
    require("wrk")
    add_server(base_config, "staller", [*SINGLE, "faults:stall_after_verify"])
    base_config["profiles"]["default"]["warmup"] = 0
    record = measure_cell(base_config, tmp_path, "staller")
    assert record["status"] == "failed"
    assert "no request completed" in record["reason"] and "stalled" in record["reason"]
    assert record["load"]["requests"] == 0
    assert set(record["load"]["latency_ms"].values()) == {None}
    assert "not measured" in record["load"]["latency_note"]


def test_one_answer_in_a_whole_run_is_flagged_stalled(base_config, tmp_path, no_leftovers):
    require("wrk")
    add_server(base_config, "staller", [*SINGLE, "faults:stall_after_one_more"])
    base_config["profiles"]["default"]["warmup"] = 0
    record = measure_cell(base_config, tmp_path, "staller")
    assert record["status"] == "ok", record["reason"]
    assert record["load"]["requests"] == 1
    assert "stalled" in record["flags"]


def test_server_answering_500_is_failed(base_config, tmp_path, no_leftovers):
    add_server(base_config, "errors500", [*SINGLE, "faults:server_error"])
    record = measure_cell(base_config, tmp_path, "errors500")
    assert record["status"] == "failed"
    assert "status 500, expected 200" in record["reason"]


def test_server_crashing_mid_load_is_failed_with_its_exit_code(base_config, tmp_path, no_leftovers):
    require("wrk")
    base_config["profiles"]["default"]["warmup"] = 0
    add_server(base_config, "crasher", [*SINGLE, "faults:crash_after"])
    record = measure_cell(base_config, tmp_path, "crasher")
    assert record["status"] == "failed"
    assert "exited with code 17 during load" in record["reason"]
    assert (tmp_path / "crasher.load.txt").read_text(), "the load tool's raw output is kept"


def test_port_taken_by_someone_else(base_config, tmp_path, no_leftovers, monkeypatch):
    """A port taken between choosing and binding: the server fails, or the port is not its own."""
    require("gunicorn")
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]
    monkeypatch.setattr(servers, "free_port", lambda host="127.0.0.1": port)
    base_config["profiles"]["default"]["ready_timeout"] = 5
    try:
        record = measure_cell(base_config, tmp_path, "gunicorn")
    finally:
        squatter.close()
    assert record["status"] == "failed"
    assert "did not start" in record["reason"]


def test_results_hold_no_environment_secrets(base_config, tmp_path, no_leftovers, monkeypatch):
    require("gunicorn", "wrk")
    monkeypatch.setenv("SERVERBENCH_TEST_SECRET", "s3cr3t-value-that-must-not-leak")
    record = measure_cell(base_config, tmp_path, "gunicorn")
    assert record["status"] == "ok", record["reason"]
    for path in tmp_path.iterdir():
        if path.is_file():
            assert "s3cr3t-value" not in path.read_text(errors="replace"), path
    assert record["server"]["host"] == "127.0.0.1"
    assert oct((tmp_path / "gunicorn.json").stat().st_mode & 0o777) == "0o644"


def _snakemake(results, *extra, servers="[gunicorn, broken]", duration=2):
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "4",
        *extra,
        "--config",
        f"servers={servers}",
        "tools=[wrk]",
        "concurrency=[10]",
        "repeats=2",
        f"duration={duration}",
        f"results={results}",
        "conformance=False",
        "work=False",
        "screenshots=False",
        "host_check_seconds=0",
    ]


@pytest.fixture
def broken_server_config(tmp_path):
    extra = tmp_path / "broken.yaml"
    extra.write_text(
        "catalogue:\n  broken:\n    language: python\n    command: [python, -c, 'import sys; sys.exit(4)', '{port}']\n"
    )
    return extra


@pytest.mark.e2e
def test_failed_cells_are_data_and_the_matrix_completes(tmp_path, broken_server_config):
    require("gunicorn", "wrk")
    results = tmp_path / "results"
    done = subprocess.run(
        _snakemake(results, "--configfile", str(broken_server_config)),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(results / "summary.csv").set_index("server")
    assert summary.loc["gunicorn", "status"] == "ok"
    assert summary.loc["broken", "status"] == "failed"
    assert "exited with code 4" in summary.loc["broken", "reason"]
    index = (results / "index.html").read_text()
    assert "Failed and skipped cells (1)" in index and "exited with code 4" in index
    assert (results / "charts" / "rps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The block at the end names it; exit 0 unless the run is strict.
    block = done.stdout[done.stdout.index("thing(s) to look at") :]
    assert "failed (1):" in block and "broken (default, hello, wrk, c=10): " in block, block
    # Under strict=True the same run (its page made again, nothing measured) exits non-zero
    # after writing every output, and says why.
    strict = subprocess.run(
        [*_snakemake(results, "--configfile", str(broken_server_config), "--forcerun", "index"), "strict=True"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert strict.returncode != 0 and "strict: 1 failed" in strict.stdout + strict.stderr, strict.stderr[-3000:]
    assert "measuring broken" not in strict.stdout + strict.stderr  # nothing measured again
    assert (results / "index.html").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_cell_leaves_nothing_and_rerun_completes_the_rest(tmp_path, sig):
    require("gunicorn", "wrk")
    results = tmp_path / "results"
    before = server_processes()
    workflow = subprocess.Popen(
        _snakemake(results, str(results / "runs.csv"), servers="[gunicorn]", duration=4),
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    # Wait until the second cell's server is up: one result written, one cell mid-way.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        written = list((results / "cells").rglob("r*.json")) if (results / "cells").exists() else []
        if written and server_processes() - before:
            break
        time.sleep(0.1)
    else:
        workflow.kill()
        pytest.fail("the workflow never reached its second cell")
    # As a terminal's Ctrl-C or a batch system does: the signal reaches the
    # workflow's whole process group, the running cell's harness included.
    os.killpg(workflow.pid, sig)
    assert workflow.wait(timeout=120) != 0
    # The cell's harness stops its server as it exits; the kernel reaps the tree a moment later.
    deadline = time.monotonic() + 10
    while server_processes() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (server_processes() - before), "a server outlived the interrupted workflow"
    written = sorted((results / "cells").rglob("r*.json"))
    for path in written:
        json.loads(path.read_text())  # never half written
    assert len(written) == 1
    rerun = subprocess.run(
        _snakemake(results, str(results / "runs.csv"), servers="[gunicorn]", duration=4),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert len(list((results / "cells").rglob("r*.json"))) == 2
    # Only the interrupted cell was measured again.
    assert re.search(r"^bench\s+1$", rerun.stdout + rerun.stderr, re.M), rerun.stderr[-2000:]
