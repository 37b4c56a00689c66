"""One cell with real servers and real tools: measured, failed or skipped, and
never a process left behind."""

import subprocess
import sys
import time

import pytest
from conftest import add_server, measure_cell, require, server_processes

# Times what it tests against a figure measured beside it: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial


@pytest.mark.parametrize("tool", ["wrk", "ab"])
def test_gunicorn_cell_is_measured(base_config, tmp_path, no_leftovers, tool):
    require("gunicorn", tool)
    record = measure_cell(base_config, tmp_path, tool=tool)
    assert record["status"] == "ok", record["reason"]
    load = record["load"]
    # How many is the machine's speed; that they were counted, and the rate is them over the run, is not.
    assert load["requests"] > 0 and load["requests_per_s"] == pytest.approx(
        load["requests"] / load["duration_s"], rel=0.02
    )
    assert load["errors_total"] == 0
    assert record["verify"]["ok"] and record["verify"]["keepalive"] == "closes-announced"
    assert record["server"]["version"].startswith("gunicorn")
    assert record["server"]["interpreter"].startswith("3.")
    usage = record["server"]["usage"]
    # gunicorn --workers 2: an arbiter and two workers
    assert usage["processes_max"] == 3
    assert usage["cpu_s"] > 0 and usage["rss_peak_bytes"] > 10 * 1024**2
    assert record["client"]["cpu_s"] > 0
    assert record["warmup"]["exit_code"] == 0 and record["warmup"]["timed_out"] is False
    assert record["server"]["stop"]["survivors"] == []
    assert record["client"]["argv"][0] == tool
    assert (tmp_path / "gunicorn.load.txt").read_text().strip()


def test_a_fractional_warm_up_of_wrk_is_interrupted_at_its_time(base_config, tmp_path, no_leftovers):
    """wrk's -d reads whole seconds: a quarter-second warm-up runs wrk -d1s and
    interrupts it (SIGINT: wrk stops, reports, exits 0) after 0.25 s, not after 1."""
    require("gunicorn", "wrk")
    base_config["profiles"]["default"]["warmup"] = 0.25
    record = measure_cell(base_config, tmp_path)
    assert record["status"] == "ok", record["reason"]
    warmup = record["warmup"]
    assert warmup["exit_code"] == 0 and warmup["timed_out"] is False
    assert 0.25 <= warmup["wall_s"] < 1.0, warmup


def test_server_pinned_to_its_cpus(base_config, tmp_path, no_leftovers):
    require("gunicorn", "wrk")
    record = measure_cell(base_config, tmp_path)
    assert record["isolation"]["cpus"] == base_config["profiles"]["default"]["server_cpus"]
    assert record["isolation"]["nofile"] >= 1024


def test_wrong_body_is_failed_not_measured(base_config, tmp_path, no_leftovers):
    require("gunicorn", "wrk")
    add_server(
        base_config,
        "wrongbody",
        ["gunicorn", "--bind", "{host}:{port}", "--chdir", "{root}/tests/apps", "faults:wrong_body"],
    )
    record = measure_cell(base_config, tmp_path, server="wrongbody")
    assert record["status"] == "failed"
    assert "wrong answer" in record["reason"] and "Goodbye" in record["reason"]
    assert record["load"] is None


def test_server_that_exits_at_once(base_config, tmp_path, no_leftovers):
    add_server(base_config, "quitter", ["python", "-c", "import sys; print('bye'); sys.exit(3)"])
    record = measure_cell(base_config, tmp_path, server="quitter")
    assert record["status"] == "failed"
    assert "exited with code 3" in record["reason"]
    assert "bye" in (tmp_path / "quitter.server.log").read_text()


def test_server_that_never_listens(base_config, tmp_path, no_leftovers):
    base_config["profiles"]["default"]["ready_timeout"] = 1
    add_server(base_config, "sleeper", ["python", "-c", "import time; time.sleep(60)  # {port}"])
    record = measure_cell(base_config, tmp_path, server="sleeper")
    assert record["status"] == "failed"
    assert "did not listen" in record["reason"]
    assert record["server"]["stop"]["survivors"] == []


def test_missing_server_program_is_skipped(base_config, tmp_path):
    add_server(base_config, "ghost", ["no-such-server-binary", "{port}"])
    record = measure_cell(base_config, tmp_path, server="ghost")
    assert record["status"] == "skipped"
    assert "no-such-server-binary" in record["reason"]


def test_missing_load_tool_is_skipped(base_config, tmp_path, no_leftovers):
    base_config["load_tools"]["wrk"]["command"][0] = "no-such-wrk"
    record = measure_cell(base_config, tmp_path)
    assert record["status"] == "skipped"
    assert "no-such-wrk" in record["reason"]


def test_worker_that_escapes_the_process_group_is_stopped(base_config, tmp_path, no_leftovers):
    """A child that calls setsid() leaves the group; the tree and cgroup still find it."""
    require("wrk")
    script = (
        "import os, sys, time, wsgiref.simple_server as s\n"
        "if os.fork() == 0:\n    os.setsid(); time.sleep(120); sys.exit()\n"
        "import importlib.util as u; spec = u.spec_from_file_location('h', sys.argv[2]); "
        "m = u.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "s.make_server('127.0.0.1', int(sys.argv[1]), m.application).serve_forever()\n"
    )
    add_server(base_config, "escaper", ["python", "-c", script, "{port}", "{apps}/python/hello.py"])
    record = measure_cell(base_config, tmp_path, server="escaper")
    assert record["status"] == "ok", record["reason"]
    assert record["server"]["stop"]["survivors"] == []


def test_leftover_detector_sees_a_stray_server():
    """The no_leftovers check is not vacuous: a stray tagged process is found."""
    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "/tmp/serverbench-run-stray"])
    try:
        deadline = time.monotonic() + 5
        while stray.pid not in server_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stray.pid in server_processes()
    finally:
        stray.kill()
        stray.wait()
    assert stray.pid not in server_processes()
