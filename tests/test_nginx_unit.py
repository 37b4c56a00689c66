"""NGINX Unit, both languages, static and dynamic processes, configured through
its control API. Unit is built from its source by scripts/install --unit (make
test does it when UNIT_SOURCE or ../shared/vendor has the tarball); without a
build the tests skip naming it, and fail when UNIT_SOURCE was given."""

import hashlib
import os
import subprocess
from pathlib import Path

import psutil
import pytest
from conftest import missing, require, require_unitd
from serverbench import REPO_ROOT
from serverbench.cell.phases import run_cell
from serverbench.plan.shapes import Cell

# Counts every Unit process on the machine before and after a test: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial


@pytest.fixture
def unit_config(base_config):
    base_config["programs"] = {"unitd": require_unitd()}
    require("wrk")
    return base_config


@pytest.mark.parametrize(
    ("server", "language"),
    [
        ("unit-python", "python"),
        ("unit-python-dynamic", "python"),
        ("unit-perl", "perl"),
        ("unit-perl-dynamic", "perl"),
    ],
)
def test_unit_application(unit_config, tmp_path, no_leftovers, no_unit_left, server, language):
    base = tmp_path / server
    record = run_cell(unit_config, Cell("default", "wrk", server, 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log")
    assert record["status"] == "ok", record["reason"]
    assert record["server"]["control"]["status"] == 200
    assert record["server"]["version"].startswith("unit version:")
    assert record["server"]["interpreter"].startswith(language)
    assert record["verify"]["keepalive"] == "keeps"
    assert record["load"]["errors_total"] == 0
    assert record["server"]["stop"]["survivors"] == []
    # The control socket lives in the cell's private run directory, never elsewhere.
    assert record["server"]["argv"][record["server"]["argv"].index("--control") + 1].startswith(
        "unix:/tmp/serverbench-run-"
    )


def test_missing_unitd_is_skipped_with_the_reason(base_config, tmp_path):
    base_config["programs"] = {"unitd": None}
    base_config["catalogue"]["unit-python"]["command"][0] = "unitd-not-installed"
    base = tmp_path / "unit"
    record = run_cell(
        base_config, Cell("default", "wrk", "unit-python", 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    assert record["status"] == "skipped"
    assert "unitd-not-installed" in record["reason"]


def unit_processes() -> set[int]:
    """Every Unit process on the machine. Unit renames its processes "unit: …" and
    writes over their environment, so neither the apps-path markers of
    no_leftovers nor the session tag find them: a test compares before and after."""
    found = set()
    for process in psutil.process_iter(["cmdline"]):
        if " ".join(process.info["cmdline"] or []).startswith("unit: "):
            found.add(process.pid)
    return found


@pytest.fixture
def no_unit_left():
    """Fails the test if a Unit process it started (main, controller, router,
    application) is still there after it."""
    before = unit_processes()
    yield
    assert unit_processes() - before == set()


def run_unit(config, tmp_path, server="unit-python"):
    base = tmp_path / server
    return run_cell(config, Cell("default", "wrk", server, 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log")


def test_no_unit_process_outlives_its_cell(unit_config, tmp_path, no_unit_left):
    record = run_unit(unit_config, tmp_path, "unit-perl-dynamic")
    assert record["status"] == "ok", record["reason"]
    # main, controller, router and the application's prototype and workers all went.
    assert record["server"]["usage"]["processes_max"] >= 4


def test_a_config_unit_refuses_fails_the_cell(unit_config, tmp_path, no_leftovers, no_unit_left):
    unit_config["catalogue"]["unit-python"]["files"] = {"unit.json": "tests/data/unit/refused.json"}
    record = run_unit(unit_config, tmp_path)
    assert record["status"] == "failed"
    assert "control API refused the config (400)" in record["reason"]
    # Unit's own words are kept: the listener passes to an application it was not given.
    assert record["server"]["control"]["status"] == 400
    assert "not-defined" in record["server"]["control"]["answer"]
    assert record["server"]["stop"]["survivors"] == []


def test_an_application_unit_cannot_start_fails_the_cell(unit_config, tmp_path, no_leftovers, no_unit_left):
    unit_config["catalogue"]["unit-python"]["files"] = {"unit.json": "tests/data/unit/missing-module.json"}
    record = run_unit(unit_config, tmp_path)
    assert record["status"] == "failed"
    assert "control API refused the config" in record["reason"]
    assert record["server"]["control"]["status"] >= 400
    # The application's import error is in the server's log, which the record keeps.
    assert "no_such_module" in (tmp_path / "unit-python.log").read_text()


def test_a_control_socket_that_never_answers_fails_in_time(unit_config, tmp_path, no_leftovers, no_unit_left):
    unit_config["catalogue"]["unit-python"]["control"] = {"socket": "{rundir}/elsewhere.sock", "file": "unit.json"}
    unit_config["profiles"]["default"]["ready_timeout"] = 3
    record = run_unit(unit_config, tmp_path)
    assert record["status"] == "failed"
    assert "elsewhere.sock did not accept connections within 3 s" in record["reason"]
    assert record["server"]["stop"]["survivors"] == []


def test_the_build_refuses_a_source_without_the_pinned_digest(tmp_path):
    """envs/unit-build.sh checks the tarball before any of its code runs."""
    source = tmp_path / "unit-1.35.0"
    source.mkdir()
    marker = tmp_path / "configure-ran"
    (source / "configure").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (source / "configure").chmod(0o755)
    tarball = tmp_path / "unit.tar.gz"
    subprocess.run(["tar", "-czf", tarball, "-C", tmp_path, "unit-1.35.0"], check=True)
    prefix = tmp_path / "prefix"
    done = subprocess.run(
        [REPO_ROOT / "envs" / "unit-build.sh", tarball, "python3-config", prefix], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "does not have the sha256 pinned in" in done.stderr
    assert not marker.exists() and not prefix.exists()


def test_the_install_keeps_its_build_log_and_rebuilds_only_on_change():
    """scripts/install --unit built Unit once (make test ran it); run again, with no
    source at hand, it finds its stamp current and neither downloads nor rebuilds."""
    unitd = Path(require_unitd())
    prefix = unitd.parent.parent
    if not (prefix / ".serverbench-installed").exists():
        missing(f"{unitd} was not built by scripts/install --unit")  # under make test: a failure
    assert "built in" in (prefix / "build.log").read_text()
    lines = (REPO_ROOT / "envs" / "unit.txt").read_text().splitlines()
    pinned = dict(line.split()[:2] for line in lines if line[:1].isalpha())
    copy = prefix / "source" / f"unit-{pinned['version']}.tar.gz"
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == pinned["sha256"]
    before = (unitd.stat().st_mtime_ns, (prefix / ".serverbench-installed").read_text())
    env = {**os.environ, "UNIT_SOURCE": "/nonexistent/unit.tar.gz"}
    done = subprocess.run([REPO_ROOT / "scripts" / "install", "--unit"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "NGINX Unit" not in done.stdout + done.stderr
    assert (unitd.stat().st_mtime_ns, (prefix / ".serverbench-installed").read_text()) == before
