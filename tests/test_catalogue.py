"""Every catalogue server, started, verified and loaded through the real
workflow (the `smoke` profile); and a server added by configuration alone."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest
from conftest import UNITD, require, server_processes
from conftest import missing as needs
from serverbench import REPO_ROOT
from serverbench.cell import servers
from serverbench.host.runenv import run_env
from serverbench.lenses.http.probes import PROBES
from serverbench.plan import config as cfg
from serverbench.plan.catalogue import Counted, server_entry
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


def _worker_pids_under(argv: list[str], port: int, load: list[str]) -> set[int]:
    """Every worker process the server had while ``load`` (an ab argv) ran against it, sampled
    from its process tree every 20 ms (a worker that replaced another lives on to be seen)."""
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    seen: set[int] = set()
    try:
        master = psutil.Process(server.pid)
        deadline = time.monotonic() + 15
        while len(master.children()) < 2 or subprocess.run(["ab", "-q", "-n", "1", f"http://127.0.0.1:{port}/"],
                                                           capture_output=True).returncode:  # fmt: skip
            assert time.monotonic() < deadline, "the server did not answer"
            time.sleep(0.1)
        client = subprocess.Popen(load, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        while client.poll() is None:
            seen |= {child.pid for child in master.children()}
            time.sleep(0.02)
        assert client.returncode == 0 and "Failed requests:        0" in client.stdout.read()
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    return seen


def test_starmans_declared_recycling_is_what_it_does(base_config, no_leftovers):
    """Starman's entry says it restarts a worker every 1000 connections unless told otherwise
    (catalogue `recycle`): with 2 workers, 2,500 fresh connections (ab without keep-alive) must
    pass some worker's 1000th, so a third worker process serves; the same requests on 2
    kept-alive connections leave the 2 first workers serving to the end."""
    require("starman", "ab")
    recycle = server_entry(base_config, "starman").recycle
    assert (recycle.counts, recycle.default) == (Counted.CONNECTIONS, 1000)
    for keepalive, workers in ((False, "more than 2"), (True, 2)):
        port = servers.free_port()
        values = {"host": "127.0.0.1", "port": port, "workers": 2, "backlog": 64,
                  "app_file": str(REPO_ROOT / "apps" / "perl" / "hello.psgi")}  # fmt: skip
        argv = servers.render_argv(CATALOGUE["starman"]["command"], values)
        load = ["ab", "-q", "-n", "2500", "-c", "2", *(["-k"] if keepalive else []), f"http://127.0.0.1:{port}/"]
        seen = _worker_pids_under(argv, port, load)
        assert len(seen) > 2 if workers == "more than 2" else len(seen) == 2, (keepalive, seen)
