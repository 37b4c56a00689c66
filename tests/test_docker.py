"""Docker as the isolation backend. The generated commands are checked here
everywhere; the real cell runs only where a Docker engine answers."""

import pytest
from serverbench import REPO_ROOT, docker
from serverbench.cell import run_cell
from serverbench.model import Cell


def test_run_command_carries_the_profiles_limits():
    argv = docker.run_argv(
        "serverbench/servers:bookworm",
        ["gunicorn", "--bind", "127.0.0.1:8000", "hello:application"],
        name="serverbench-abc",
        cpus=[0, 1],
        memory_limit=512 * 1024**2,
        nofile=20000,
        mounts=["/tmp/serverbench-run-x"],
        env={"PYTHONPATH": "/tmp/serverbench-run-x/apps/python"},
        workdir="/tmp/serverbench-run-x",
    )
    assert argv[:3] == ["docker", "run", "--rm"]

    def value(flag):
        return argv[argv.index(flag) + 1]

    assert value("--name") == "serverbench-abc"
    assert value("--cpus") == "2" and value("--cpuset-cpus") == "0,1"
    assert value("--memory") == str(512 * 1024**2) == value("--memory-swap")
    assert value("--network") == "host"
    assert value("--ulimit") == "nofile=20000:20000"
    assert value("--volume") == "/tmp/serverbench-run-x:/tmp/serverbench-run-x"
    assert value("--env") == "PYTHONPATH=/tmp/serverbench-run-x/apps/python"
    assert "--init" in argv
    image = argv.index("serverbench/servers:bookworm")
    assert argv[image + 1 :] == ["gunicorn", "--bind", "127.0.0.1:8000", "hello:application"]


def test_no_memory_flag_without_a_limit():
    argv = docker.run_argv("img", ["true"], name="n", cpus=[0], memory_limit=None, nofile=1024, mounts=[])
    assert "--memory" not in argv and argv[-2:] == ["img", "true"]


def test_build_command_uses_the_shipped_dockerfile():
    argv = docker.build_argv("serverbench/servers:bookworm", REPO_ROOT / "envs/docker/servers.Dockerfile", REPO_ROOT)
    assert argv == [
        "docker",
        "build",
        "--tag",
        "serverbench/servers:bookworm",
        "--file",
        str(REPO_ROOT / "envs/docker/servers.Dockerfile"),
        str(REPO_ROOT),
    ]
    assert (REPO_ROOT / "envs/docker/servers.Dockerfile").read_text().startswith("#")


def test_without_an_engine_the_cell_is_skipped_with_the_reason(base_config, tmp_path):
    problem = docker.engine_problem()
    if problem is None:
        pytest.skip("a Docker engine answers here: the real run below covers this host")
    base_config["profiles"]["default"]["isolation"] = "docker"
    base = tmp_path / "gunicorn"
    record = run_cell(
        base_config, Cell("default", "wrk", "gunicorn", 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    assert record["status"] == "skipped"
    assert record["reason"] == f"docker isolation: {problem}"


@pytest.mark.skipif(docker.engine_problem() is not None, reason=f"Docker: {docker.engine_problem()}")
@pytest.mark.parametrize("server", ["gunicorn", "starman"])
def test_a_cell_runs_in_a_container(server, base_config, tmp_path, no_leftovers):
    base_config["profiles"]["default"].update(isolation="docker", ready_timeout=60)
    base = tmp_path / server
    record = run_cell(base_config, Cell("default", "wrk", server, 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log")
    assert record["status"] == "ok", record["reason"]
    assert record["isolation"]["method"] == "docker" and record["isolation"]["container_id"]
    assert record["server"]["docker_argv"][:2] == ["docker", "run"]
    assert record["server"]["usage"]["processes_max"] >= 2
