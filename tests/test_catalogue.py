"""Every catalogue server, started, verified and loaded through the real
workflow (the `smoke` profile); and a server added by configuration alone."""

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from conftest import UNITD, server_processes
from conftest import missing as needs
from serverbench import REPO_ROOT
from serverbench.cell.probes import PROBES
from serverbench.host.runenv import run_env
from serverbench.plan import config as cfg
from serverbench.plan.config import expand_aliases

pytestmark = pytest.mark.e2e
# Read as the harness reads it: an alias (the A/A control) is its original under a second name.
_CONFIG = cfg.read(REPO_ROOT / "config.yaml")
expand_aliases(_CONFIG)
CATALOGUE = _CONFIG["catalogue"]


def snakemake(*args, timeout=1500):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "4", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    results = tmp_path_factory.mktemp("smoke") / "results"
    before = server_processes()
    # Only the table (the charts and the page are tested elsewhere): every catalogue server is the point here.
    # The request framing checks are left out (tests/test_framing.py, and the e2e run's two servers).
    targets = [str(results / "summary.csv"), str(results / "conformance.csv")]
    # The probes wait on servers (a second's silence, the Date a second later, a client that dribbles
    # for 3 s), never on their speed, and this test asks only that each server starts, answers and
    # takes load without an error, never how fast: up to eight servers' probes at a time here, and
    # two servers' cells (a second of wrk at 10 connections; each cell's server and client share
    # the two CPUs with the other's and with probes').
    slots = ["--cores", "12", "--resources", "bench_slot=8", "--default-resources", "bench_slot=4"]
    options = ["profile=smoke", f"results={results}", "conformance_framing=False", "host_check_seconds=0"]
    done = snakemake(*targets, *slots, "--config", *options)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(results / "summary.csv").set_index("server")
    return results, summary, server_processes() - before


def _installed(spec) -> str | None:
    """The first program a server needs that is not installed, if any."""
    path = run_env()["PATH"]
    for argv in (spec.get("backend"), spec["command"]):
        if argv and argv[0] == "unitd" and UNITD:
            continue
        if argv and shutil.which(str(argv[0]), path=path) is None:
            return str(argv[0])
    return None


@pytest.mark.parametrize("server", sorted(CATALOGUE))
def test_catalogue_server(smoke, server):
    results, summary, _ = smoke
    assert server in summary.index, f"no summary row for {server}"
    row = summary.loc[server]
    missing = _installed(CATALOGUE[server])
    if missing:
        assert row["status"] == "skipped" and missing in row["reason"]
        needs(f"{server} needs {missing}, not installed here")  # under make test: a failure
    assert row["status"] == "ok", row["reason"]
    record = json.loads(next((results / "cells" / "smoke" / "hello" / "wrk" / server).rglob("r1.json")).read_text())
    assert record["verify"]["ok"]
    # It took load: wrk's requests answered, none with an error status or in time-outs (how many is
    # the machine's speed; a server that closes every connection shows read errors, flagged apart).
    errors = record["load"]["errors"]
    assert record["load"]["requests"] > 0 and errors["non_2xx"] == errors["timeout"] == errors["connect"] == 0, errors
    assert record["server"]["version"] and "Traceback" not in record["server"]["version"]
    if CATALOGUE[server]["language"] != "none":
        assert record["server"]["interpreter"], "the interpreter really run is recorded"
    assert record["server"]["stop"]["survivors"] == []
    # A full conformance row: every check, each with an outcome (the matrix's row).
    conformance = pd.read_csv(results / "conformance.csv")
    row = conformance[(conformance["server"] == server) & (conformance["check"] != "httplint")]
    assert set(row["check"]) == {probe.__name__ for probe in PROBES} | {"app_lint"}, row[["check", "note"]]
    assert set(row["outcome"]) <= {"pass", "warn", "fail", "info"}


def test_smoke_leaves_nothing_running(smoke):
    _, _, left = smoke
    assert not left


def test_server_added_by_config_alone(tmp_path):
    done = snakemake(
        str(tmp_path / "summary.csv"),
        "--configfile",
        "tests/data/extra-server.yaml",
        "--config",
        f"results={tmp_path}",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert list(summary["server"]) == ["uwsgi-threads"]
    assert summary.loc[0, "status"] == "ok", summary.loc[0, "reason"]
