"""Docker as the isolation backend, for real: Debian's engine started by
serverbench (no bridge, no iptables, a root-only socket), the image made from
Debian's packages with debootstrap, and containerised cells of both languages
that are verified, loaded, stopped and removed."""

import json
import shutil
import stat
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from conftest import add_server, measure_cell, missing, require, require_unitd, run_snakemake
from serverbench import REPO_ROOT
from serverbench.cell import servers
from serverbench.cell.phases import run_cell
from serverbench.host import containers as docker
from serverbench.host import engine, images
from serverbench.plan.shapes import Cell

MISSING = [program for program in ("dockerd", "debootstrap", "docker") if shutil.which(program) is None]


def test_run_command_carries_the_profiles_limits():
    argv = docker.run_argv(
        "serverbench/servers:0123456789ab",
        ["gunicorn", "--bind", "127.0.0.1:8000", "hello:application"],
        name="serverbench-abc",
        cpus=[0, 1],
        memory_limit=512 * 1024**2,
        nofile=20000,
        mounts=["/tmp/serverbench-run-x"],
        read_only=["/repo"],
        env={"PYTHONPATH": "/tmp/serverbench-run-x/apps/python"},
        workdir="/tmp/serverbench-run-x",
    )
    assert argv[:2] == ["docker", "run"]
    assert "--rm" not in argv  # removed by cleanup(), after its State.OOMKilled was read

    def value(flag):
        return argv[argv.index(flag) + 1]

    def values(flag):
        return [argv[i + 1] for i, word in enumerate(argv) if word == flag]

    assert value("--name") == "serverbench-abc"
    assert value("--cpus") == "2" and value("--cpuset-cpus") == "0,1"
    assert value("--memory") == str(512 * 1024**2) == value("--memory-swap")
    assert value("--network") == "host"
    assert value("--ulimit") == "nofile=20000:20000"
    assert value("--label") == engine.LABEL
    assert values("--volume") == ["/tmp/serverbench-run-x:/tmp/serverbench-run-x", "/repo:/repo:ro"]
    assert value("--env") == "PYTHONPATH=/tmp/serverbench-run-x/apps/python"
    assert "--init" in argv
    image = argv.index("serverbench/servers:0123456789ab")
    assert argv[image + 1 :] == ["gunicorn", "--bind", "127.0.0.1:8000", "hello:application"]


def test_no_memory_flag_without_a_limit():
    argv = docker.run_argv("img", ["true"], name="n", cpus=[0], memory_limit=None, nofile=1024, mounts=[])
    assert "--memory" not in argv and argv[-2:] == ["img", "true"]


def test_the_engine_changes_no_network_setting():
    argv = engine.dockerd_argv(REPO_ROOT / "state")
    assert {"--iptables=false", "--ip-forward=false", "--ip-masq=false", "--userland-proxy=false"} <= set(argv)
    assert argv[argv.index("--bridge") + 1] == "none"
    assert argv[argv.index("--host") + 1] == f"unix://{REPO_ROOT / 'state' / 'docker.sock'}"
    assert argv[argv.index("--group") + 1] == "root"
    assert not [word for word in argv if "tcp://" in word]


def test_the_image_tag_follows_its_sources(tmp_path):
    (tmp_path / "apt.txt").write_text("starman\n")
    first = images.context_digest(tmp_path, extra="base-a")
    assert images.context_digest(tmp_path, extra="base-a") == first
    assert images.context_digest(tmp_path, extra="base-b") != first
    (tmp_path / "apt.txt").write_text("starman\nnginx-light\n")
    assert images.context_digest(tmp_path, extra="base-a") != first
    assert images.sources_list("http://deb.debian.org/debian", "bookworm").splitlines() == [
        "deb http://deb.debian.org/debian bookworm main",
        "deb http://deb.debian.org/debian bookworm-updates main",
        "deb http://deb.debian.org/debian-security bookworm-security main",
    ]


def test_without_an_engine_the_cell_is_skipped_with_the_reason(base_config, tmp_path, monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    base_config["docker"]["state_dir"] = str(tmp_path / "no-engine")
    base_config["profiles"]["default"]["isolation"] = "docker"
    problem = engine.engine_problem()
    if problem is None:
        # A machine kind, not an install's gap: make test installs the engine, never starts it.
        pytest.skip("a different machine kind: this host's own Docker engine answers on its default socket")
    base = tmp_path / "gunicorn"
    record = run_cell(
        base_config, Cell("default", "wrk", "gunicorn", 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    assert record["status"] == "skipped"
    assert record["reason"].startswith(f"docker isolation: {problem}")
    assert str(tmp_path / "no-engine" / "docker.sock") in record["reason"]


def test_a_workflow_run_starts_and_stops_its_engine(tmp_path, base_config_module):
    """A run that asks for docker starts serverbench's engine if none answers, and stops it at the end."""
    if MISSING:
        missing(f"Docker tests need {', '.join(MISSING)} (scripts/install --docker)")
    own = engine.Engine(engine.state_dir(base_config_module))
    if own.answers():
        missing(f"serverbench's engine ({own.state_dir}) already answers, left by an earlier run: the run would use it")
    if engine.engine_problem() is None:
        # A machine kind, not an install's gap: make test installs the engine, never starts it.
        pytest.skip("a different machine kind: this host's own Docker engine answers, so the run would start none")
    cell = tmp_path / "cells" / "default" / "hello" / "wrk" / "starman" / "c10" / "r1.json"
    done = run_snakemake(
        ["--cores", "2", str(cell)],
        [
            "isolation=docker",
            "servers=[starman]",
            "tools=[wrk]",
            "concurrency=[10]",
            "repeats=1",
            "duration=1",
            f"results={tmp_path}",
        ],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(cell.read_text())
    assert record["status"] == "ok", record["reason"]
    assert record["isolation"]["method"] == "docker"
    assert own.pid() is None and not own.answers(), "the run left its engine running"


@pytest.fixture(scope="module")
def docker_run(base_config_module):
    """serverbench's engine (or the host's), the servers image, and, after the tests, nothing left."""
    if MISSING:
        missing(f"Docker tests need {', '.join(MISSING)} (scripts/install --docker)")
    links_before = set(psutil.net_if_addrs())
    session = engine.open_session(base_config_module)
    try:
        image = images.build_servers(base_config_module, "python", session.env)
        yield session, image, links_before
        assert engine.remove_labelled_containers(session.env) == [], "a test left a container"
    finally:
        started = session.engine
        session.close()
    if started is not None:
        assert started.pid() is None and not started.answers(), "the engine the tests started still runs"
        mounts = Path("/proc/self/mounts").read_text()
        assert f" {started.state_dir}/" not in mounts, "the engine left a mount behind"


@pytest.fixture(scope="module")
def base_config_module():
    from serverbench.plan import config as cfg

    return cfg.load(REPO_ROOT / "config.yaml")


def docker_config(base_config, docker_run, **profile):
    session, _, _ = docker_run
    base_config["docker"] = {**base_config["docker"], "state_dir": str(engine.state_dir(base_config))}
    base_config["profiles"]["default"].update(isolation="docker", ready_timeout=60, **profile)
    return base_config


def test_engine_listens_on_a_root_only_socket_and_adds_no_network(docker_run):
    session, _, links_before = docker_run
    if session.engine is None:
        pytest.skip("a different machine kind: this host's own Docker engine answers, so serverbench started none")
    mode = session.engine.socket.stat()
    assert stat.S_ISSOCK(mode.st_mode) and (mode.st_uid, mode.st_gid) == (0, 0)
    assert stat.S_IMODE(mode.st_mode) & 0o007 == 0, oct(mode.st_mode)
    dockerd = psutil.Process(session.engine.pid())
    for process in [dockerd, *dockerd.children(recursive=True)]:
        listening = [c for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening == [], (process.name(), listening)
    networks = subprocess.run(
        ["docker", "network", "ls", "--format", "{{.Name}}"], capture_output=True, text=True, env=session.env
    ).stdout.split()
    assert "bridge" not in networks and set(networks) <= {"host", "none"}
    assert set(psutil.net_if_addrs()) == links_before, "the engine added a network interface"


def test_the_image_is_built_once_and_its_log_kept(docker_run, base_config_module):
    session, image, _ = docker_run
    assert image.tag.endswith(":" + image.digest[:12])
    again = images.build_servers(base_config_module, "python", session.env)
    assert again.tag == image.tag and again.built is False
    log = (REPO_ROOT / again.log) if again.log else None
    assert log and log.exists() and log.stat().st_size > 0


@pytest.mark.parametrize("server", ["gunicorn", "starman", "unit-python", "unit-perl"])
def test_a_cell_runs_in_a_container(server, base_config, docker_run, tmp_path, no_leftovers):
    session, image, _ = docker_run
    if server.startswith("unit-"):
        # The image builds Unit from the source the host's install verified and kept.
        require_unitd()
    record = measure_cell(docker_config(base_config, docker_run, memory_limit="256M"), tmp_path, server)
    assert record["status"] == "ok", record["reason"]
    assert record["verify"]["ok"] and record["load"]["requests"] > 0
    assert record["isolation"]["method"] == "docker" and record["isolation"]["container_id"]
    assert record["isolation"]["limits_enforced"] is True
    assert record["isolation_image"]["tag"] == image.tag
    argv = record["server"]["docker_argv"]
    assert argv[:2] == ["docker", "run"] and argv[argv.index("--network") + 1] == "host"
    assert record["server"]["host"] == "127.0.0.1"
    usage = record["server"]["usage"]
    # Read from the container's own cgroup: the workers, not the docker client.
    assert usage["processes_max"] >= 2 and usage["cpu_s"] > 0
    assert 0 < usage["cgroup_memory_peak_bytes"] <= 256 * 1024**2
    assert record["server"]["stop"]["survivors"] == []
    assert record["server"]["version"] and "Traceback" not in record["server"]["version"]
    containers = subprocess.run(
        ["docker", "ps", "--all", "--quiet", "--filter", f"name={record['isolation']['container']}"],
        capture_output=True,
        text=True,
        env=session.env,
    )
    assert containers.stdout.strip() == "", "the container was not removed"


def test_a_container_over_its_memory_limit_is_recorded_as_killed(base_config, docker_run, tmp_path, no_leftovers):
    require("wrk")
    config = docker_config(base_config, docker_run, memory_limit="160M")
    add_server(
        config,
        "hog",
        ["gunicorn", "--bind", "{host}:{port}", "--workers", "1", "--chdir", "{root}/tests/apps", "faults:memory_hog"],
    )
    record = measure_cell(config, tmp_path, "hog")
    assert record["isolation"]["method"] == "docker" and record["isolation"]["memory_limit_bytes"] == 160 * 1024**2
    seen = {key: record.get(key) for key in ("status", "reason", "flags", "isolation")}
    assert (record["server"]["oom_kills"] or 0) >= 1, json.dumps({**seen, "usage": record["server"].get("usage")})
    # As on the host (test_integrity): failed, errors, or stalled; never a clean result.
    # A worker killed for memory fails the cell (the reason says OOM) or flags its figure: never a
    # clean result, however fast the machine.
    if record["status"] == "failed":
        assert "OOM" in record["reason"], record["reason"]
    else:
        assert record["status"] == "ok" and "oom_killed" in record["flags"], record


def test_a_container_listens_on_loopback_only(docker_run, tmp_path):
    """What a server in a container listens on, read from the host (it shares the host's network)."""
    session, image, _ = docker_run
    port = servers.free_port()
    isolation = docker.DockerIsolation(cpus=[0], memory_limit=None, container=f"serverbench-test-{port}")
    isolation.docker_env = session.env
    argv = docker.run_argv(
        image.tag,
        ["gunicorn", "--bind", f"127.0.0.1:{port}", "--chdir", str(REPO_ROOT / "apps" / "python"), "hello:application"],
        name=isolation.container,
        cpus=[0],
        memory_limit=None,
        nofile=1024,
        mounts=[],
        read_only=[REPO_ROOT],
    )
    client = subprocess.Popen(argv, env=session.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (isolation.attach() and isolation.groups and _listening(isolation)):
            assert client.poll() is None and time.monotonic() < deadline, "the container never listened"
            time.sleep(0.2)
        addresses = {c.laddr for c in _listening(isolation)}
        assert addresses == {("127.0.0.1", port)}, addresses
    finally:
        isolation.cleanup()
        client.wait(timeout=30)


def _listening(isolation) -> list:
    """The listening inet sockets of the processes in the container's cgroup."""
    pids = {int(pid) for pid in (isolation.groups[0] / "cgroup.procs").read_text().split()}
    return [c for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN and c.pid in pids]


def test_a_failing_server_is_a_failed_cell_and_its_container_is_removed(
    base_config, docker_run, tmp_path, no_leftovers
):
    session, _, _ = docker_run
    config = docker_config(base_config, docker_run)
    add_server(config, "broken", ["python", "-c", "import sys; sys.exit(4)", "{port}"])
    record = measure_cell(config, tmp_path, "broken")
    assert record["status"] == "failed" and "exited with code 4" in record["reason"], record["reason"]
    leftover = subprocess.run(
        ["docker", "ps", "--all", "--quiet", "--filter", f"name={record['isolation']['container']}"],
        capture_output=True,
        text=True,
        env=session.env,
    )
    assert leftover.stdout.strip() == ""
