"""The work lens (serverbench.cell.work) on real servers under real valgrind and perf:
it tells uWSGI's two plugins apart, finds a variant with 1% more work, and gives a
reason, not a figure, when a worker is killed mid-life."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pandas as pd
import psutil
import pytest
from conftest import require
from serverbench.cell import callgrind, perfcount
from serverbench.cell.work import run_work
from serverbench.decide.judgement import LESS_WORK, MORE_WORK
from serverbench.decide.work import work_comparisons
from serverbench.tables.work import work_tables

LENS = ("valgrind", "perf", "setarch", "h2load", "taskset")


@pytest.fixture
def work_config(base_config):
    """The shipped config with shorter lives (the marginal needs only a few hundred requests)."""
    base_config["work"].update(requests=[50, 350])
    return base_config


def _measure(config, tmp_path, *servers):
    paths = []
    for server in servers:
        path = tmp_path / f"{server}.json"
        run_work(config, "default", server, "hello", path, tmp_path / f"{server}.log")
        paths.append(path)
    return paths


def test_callgrind_counts_add_up_and_a_killed_process_is_refused(tmp_path):
    """Self costs by object sum to callgrind's totals; a process killed with SIGKILL
    leaves an empty file, which is refused rather than counted as nothing."""
    require("valgrind")
    out = tmp_path / "callgrind.%p"
    subprocess.run(["valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out}", "/bin/true"], check=True)
    (written,) = tmp_path.glob("callgrind.*")
    count = callgrind.read(written)
    assert count.instructions == sum(count.by_object.values()) > 10_000
    assert any("libc.so" in name or "ld-linux" in name for name in count.by_object)
    sleeper = subprocess.Popen(["valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out}", "sleep", "30"])
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(f"callgrind.{sleeper.pid}")) and time.monotonic() < deadline:
        time.sleep(0.1)
    sleeper.send_signal(signal.SIGKILL)
    sleeper.wait()
    with pytest.raises(callgrind.CallgrindError):
        callgrind.read(tmp_path / f"callgrind.{sleeper.pid}")


def test_perf_counts_syscalls_and_names_them(tmp_path):
    """perf stat's exact total counts each of 2,000 extra syscalls; perf trace names them
    (it may miss one in thousands: see serverbench.cell.perfcount)."""
    require("perf")
    program = "import os, sys\nfor _ in range(int(sys.argv[1])): os.getppid()"
    totals, named = [], []
    for n in (500, 2500):
        subprocess.run([*perfcount.stat_argv(tmp_path / "stat.csv"), "python3", "-c", program, str(n)], check=True)
        totals.append(perfcount.read_stat(tmp_path / "stat.csv"))
        subprocess.run([*perfcount.trace_argv(tmp_path / "trace.txt"), "python3", "-c", program, str(n)], check=True)
        named.append(perfcount.totals(perfcount.read_trace(tmp_path / "trace.txt")))
    assert 2000 <= totals[1]["syscalls"] - totals[0]["syscalls"] <= 2005
    assert totals[1]["cpu_ms"] > 0 and totals[1]["context_switches"] >= 0
    assert 1990 <= named[1]["getppid"] - named[0]["getppid"] <= 2010


def test_the_lens_tells_uwsgis_plugins_apart(work_config, tmp_path):
    """uWSGI's psgi plugin does more user-space instructions per request than its python3
    plugin (the pilot: 13.8% more), with the same few syscalls: decided on work."""
    require(*LENS, "uwsgi-core")
    paths = _measure(work_config, tmp_path, "uwsgi-debian", "uwsgi-psgi")
    work, detail = work_tables(paths)
    assert list(work["status"]) == ["ok", "ok"], list(work["reason"])
    figures = work.set_index("server")
    assert figures.loc["uwsgi-debian", "instructions_per_request"] > 10_000
    assert 1 <= figures.loc["uwsgi-debian", "syscalls_per_request"] < 50
    classes = detail[(detail["kind"] == "class") & (detail["server"] == "uwsgi-psgi")].set_index("name")["per_request"]
    assert classes.idxmax() == "interpreter"  # libperl does most of the work
    (same_server,) = [c for c in work_comparisons(work, work_config) if c.kind == "same server"]
    assert (same_server.a, same_server.b) == ("uwsgi-debian", "uwsgi-psgi")
    assert same_server.outcome == LESS_WORK and same_server.estimate < 0.95


def test_a_planted_one_percent_is_more_work(work_config, tmp_path):
    """gunicorn-gthread with 1% of its hello's cost planted as a fixed loop count comes out
    as more work than gunicorn-gthread, and the A/A twin (another directory and
    environment) sets the interval's width."""
    require(*LENS, "gunicorn")
    catalogue = work_config["catalogue"]
    planted = {"SERVERBENCH_EXTRA_SHARE": "0.01"}
    catalogue["gunicorn-gthread-plus1"] = {**catalogue["gunicorn-gthread-plus3"], "env": planted}
    servers = ("gunicorn-gthread", "gunicorn-gthread-again", "gunicorn-gthread-plus1")
    work, _ = work_tables(_measure(work_config, tmp_path, *servers))
    assert set(work["status"]) == {"ok"}, list(work["reason"])
    judged = {c.a: c for c in work_comparisons(work, work_config)}
    planted = judged["gunicorn-gthread-plus1"]
    assert planted.kind == "variant" and planted.outcome == MORE_WORK
    assert 1.005 < planted.estimate < 1.02
    twin = judged["gunicorn-gthread-again"]
    assert abs(twin.estimate - 1) < 0.001  # the lens's spread: the target is 0.1%


def test_a_worker_killed_mid_life_gives_a_reason(work_config, tmp_path):
    """A worker killed with SIGKILL writes no counts: the record says why and has no figure."""
    require(*LENS, "uwsgi-core")
    marker = "serverbench-run-"
    killed = []

    def kill_a_worker():
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            for process in psutil.process_iter(["cmdline", "ppid"]):
                cmdline = " ".join(process.info["cmdline"] or [])
                parent_is_server = (
                    process.info["ppid"] and marker in " ".join(psutil.Process(process.info["ppid"]).cmdline())
                    if psutil.pid_exists(process.info["ppid"] or 0)
                    else False
                )
                if marker in cmdline and "uwsgi-core" in cmdline and parent_is_server:
                    time.sleep(2)  # into the life, past the start
                    os.kill(process.pid, signal.SIGKILL)
                    killed.append(process.pid)
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    (path,) = _measure(work_config, tmp_path, "uwsgi-debian")
    killer.join()
    assert killed, "no worker was found to kill"
    work, _ = work_tables([path])
    row = work.iloc[0]
    assert row["status"] == "failed" and row["reason"]
    assert pd.isna(row["instructions_per_request"]) and pd.isna(row["syscalls_per_request"])
    assert isinstance(row["reason"], str) and row["reason"]
