"""Shared fixtures. Tests use real servers and tools; a test whose program is
missing skips and names it (under `make test`, which installs them: fails, see missing())."""

from __future__ import annotations

import copy
import functools
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest
from serverbench import REPO_ROOT
from serverbench.cell.phases import run_cell
from serverbench.files import read_json
from serverbench.host.runenv import resolve_program, run_env
from serverbench.plan import config as cfg
from serverbench.plan.shapes import Cell

RAW = Path(__file__).parent / "data" / "raw"
# Each test file's time in the last recorded make test (benchmarks/test_times.py --write).
TEST_TIMES = REPO_ROOT / "docs" / "data" / "test-times.csv"
# Records of the default matrix written before the typed model, with their tables.
RECORDS_V1 = Path(__file__).parent / "data" / "records-v1"


def recorded_seconds(table: Path = TEST_TIMES) -> dict[str, float]:
    """Each test file's seconds in the last recorded make test, by file name."""
    import csv

    try:
        with table.open(newline="") as rows:
            return {row["file"].strip("`"): float(row["seconds"]) for row in csv.DictReader(rows)}
    except (OSError, KeyError, ValueError):
        return {}


def pytest_collection_modifyitems(config, items):
    """The longest files first, each file's tests in their own order. make test's paired set
    hands whole files to its two workers as each frees (pytest-xdist --dist loadfile
    --no-loadscope-reorder): started longest first, the two end together, where in the file
    names' order the longest file began last and one worker waited minutes for the other."""
    seconds = recorded_seconds()
    items.sort(key=lambda item: -seconds.get(item.path.name, 0.0))


def unitd_path() -> str | None:
    """NGINX Unit's unitd as the harness finds it: $UNITD, else the config's
    program_dirs (where scripts/install --unit builds it), else PATH."""
    resolved = os.environ.get("UNITD") or resolve_program(cfg.load(REPO_ROOT / "config.yaml"), ["unitd"])[0]
    return shutil.which(resolved, path=run_env()["PATH"])


UNITD = unitd_path()


# Set by `make test`, which installs everything the tests use first and runs as root on the
# project's machine: there, a missing program, root, a writable cgroup or a network namespace
# is the install's (or the machine's) failure, never a reason to skip.
MAKE_TEST = bool(os.environ.get("SERVERBENCH_MAKE_TEST"))


def missing(reason: str) -> None:
    """Skip the calling test for ``reason`` (something it needs is not installed, or not
    given: root, a writable cgroup, network namespaces), or fail under `make test`, which
    provides all of them on the project's machine."""
    if MAKE_TEST:
        pytest.fail(f"make test provides the tests' needs (programs, root, cgroups, namespaces), yet: {reason}")
    pytest.skip(reason)


def require_unitd() -> str:
    """unitd, or a skip naming it (under `make test`, whose install builds Unit, a failure);
    a failure too wherever UNIT_SOURCE is set (the install was given a source, so it should
    have built Unit)."""
    if UNITD:
        return UNITD
    if os.environ.get("UNIT_SOURCE"):
        pytest.fail(f"UNIT_SOURCE is set ({os.environ['UNIT_SOURCE']}) but no unitd was built (scripts/install --unit)")
    missing("needs NGINX Unit's unitd: scripts/install --unit with UNIT_SOURCE=<unit-1.35.0.tar.gz> builds it")


def require(*programs: str) -> None:
    """Skip the calling test unless every program is on PATH (under `make test`: fail)."""
    path = run_env()["PATH"]
    absent = [p for p in programs if shutil.which(p, path=path) is None]
    if absent:
        missing(f"needs {', '.join(absent)} on PATH (install with scripts/install)")


def require_server(server: str, config: dict | None = None) -> None:
    """Skip the calling test unless the programs a catalogue server starts are installed, found
    as the harness finds them (its ``programs``, ``program_dirs``, then PATH); under `make test`: fail."""
    config = config or _shipped_config()
    spec = config["catalogue"][server]
    path = run_env()["PATH"]
    for argv in (spec.get("backend"), spec["command"]):
        program = resolve_program(config, argv)[0] if argv else None
        if program and shutil.which(str(program), path=path) is None:
            missing(f"{server} needs {program}, not installed here (scripts/install)")


@functools.cache
def _shipped_config() -> dict:
    """config.yaml read and validated once a session (each test gets its own copy)."""
    return cfg.load(REPO_ROOT / "config.yaml")


@pytest.fixture
def base_config() -> dict:
    """The shipped config.yaml, validated, with a short default profile."""
    config = copy.deepcopy(_shipped_config())
    profile = config["profiles"]["default"]
    # TIME_WAIT draining is tested on its own; here it would only make tests wait.
    profile.update(
        duration=1, warmup=1, repeats=1, concurrency=[10], ready_timeout=15, stop_grace=3, time_wait_max=10**6
    )
    # Exactly one round: no rounds added for precision.
    profile.update(precision=None, min_repeats=None, max_repeats=None, measuring_budget=None)
    return config


# Every process started by this test session inherits this tag in its
# environment, so leftovers are told apart from anyone else's processes.
SESSION_TAG = f"serverbench-test-{uuid.uuid4().hex}"
os.environ["SERVERBENCH_TEST_SESSION"] = SESSION_TAG


# Load clients carry no path of the project: they are known by their program's name.
LOAD_CLIENTS = {"wrk", "ab", "h2load", "oha"}


def server_processes() -> set[int]:
    """PIDs of this session's processes that run a serverbench app (under valgrind or perf
    too: their command names the app) or a load client."""
    found = set()
    markers = (str(REPO_ROOT / "apps"), str(REPO_ROOT / "tests" / "apps"), "serverbench-run-")
    # This test process and those above it (pytest's, xdist's) are never leftovers; anything else
    # is judged by its tag, wherever it runs (a server of an app in pytest's tmp dir included).
    ours = {os.getpid(), *(parent.pid for parent in psutil.Process().parents())}
    for process in psutil.process_iter(["cmdline"]):
        argv = process.info["cmdline"] or []
        cmdline = " ".join(argv)
        client = any(os.path.basename(part) in LOAD_CLIENTS for part in argv[:4])
        if process.pid in ours or not (client or any(m in cmdline for m in markers)):
            continue
        try:
            if process.environ().get("SERVERBENCH_TEST_SESSION") == SESSION_TAG:
                found.add(process.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves a server process behind."""
    before = server_processes()
    yield
    left = server_processes() - before
    assert not left, f"processes left running: {[psutil.Process(p).cmdline() for p in left if psutil.pid_exists(p)]}"


def measure_cell(config: dict, tmp_path: Path, server: str = "gunicorn", tool: str = "wrk", concurrency: int = 10):
    """One real cell of the default profile; its record, checked to be the one written beside its raw files."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    base = tmp_path / server
    paths = (f"{base}.json", f"{base}.load.txt", f"{base}.server.log")
    record = run_cell(config, Cell("default", tool, server, concurrency, 1), *paths)
    assert read_json(paths[0]) == record
    assert all(Path(path).exists() for path in paths)
    return record


def add_server(config: dict, name: str, command: list, language: str = "python", **extra) -> None:
    """A catalogue entry made for one test."""
    config["catalogue"][name] = {"language": language, "command": command, **extra}


# A profile's settings for one short cell on this small machine: one worker on CPU 0, the client
# on CPU 1, a second of load (tests override what they are about).
QUICK_PROFILE = {
    "tools": ["wrk"],
    "concurrency": [1],
    "repeats": 2,
    "duration": 1,
    "requests": 1000,
    "warmup": 0,
    "timeout": 5,
    "workers": 1,
    "threads": 1,
    "backlog": 64,
    "server_cpus": [0],
    "client_cpus": [1],
    "memory_limit": None,
    "ready_timeout": 15,
    "stop_grace": 3,
    "sample_interval": 0.1,
    "fairness": "off",
    "time_wait_max": 10**6,
}
# The tiny matrix the workflow tests run: 2 servers, 1 tool, 1 concurrency, 2 repeats of 1 s.
TINY_MATRIX = ["servers=[gunicorn, starman]", "tools=[wrk]", "concurrency=[10]", "repeats=2", "duration=1"]


def run_snakemake(
    options: list[str],
    config: list[str],
    timeout: float = 900,
    env: dict | None = None,
    conformance: bool = False,
    work: bool = False,
    screenshots: bool = False,
    host_check: bool = False,
) -> subprocess.CompletedProcess:
    """The snakemake CLI from the repository root (so the workflow profile loads). The HTTP
    probes, the work lens, the page's screenshots and the CPUs' steadiness check (3 s a run)
    are left out unless asked for: test_e2e, test_catalogue, test_conformance, test_work and
    test_compare test them, and every other workflow test would only spend CI's time on them."""
    import sys

    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            *options,
            "--config",
            *config,
            f"conformance={conformance}",
            f"work={work}",
            f"screenshots={screenshots}",
            *([] if host_check else ["host_check_seconds=0"]),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
