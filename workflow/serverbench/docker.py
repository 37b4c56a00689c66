"""Docker as the isolation backend, as the seed study ran its servers.

The server runs in a container from the language's image (built from
``envs/docker/*.Dockerfile``) with the profile's CPUs and memory given to
Docker (``--cpus``, ``--cpuset-cpus``, ``--memory``); the network is the
host's, so ports and the load tool stay as they are. Once the container runs,
its cgroup is found and read exactly like serverbench's own, so monitoring,
OOM kills and stopping work unchanged. Every command is an argv.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from serverbench.isolation import CGROUP_ROOT, V1_CONTROLLERS, Isolation, cgroup_version

ENGINE_TIMEOUT_S = 10


def engine_problem(docker: str = "docker") -> str | None:
    """Why no Docker engine can be used here, or None when one answers."""
    if shutil.which(docker) is None:
        return f"{docker!r} not found on PATH"
    try:
        done = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=ENGINE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"no Docker engine answered `{docker} info` within {ENGINE_TIMEOUT_S} s"
    if done.returncode != 0 or not done.stdout.strip():
        reason = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine answers `{docker} info`: {reason}"
    return None


def build_argv(image: str, dockerfile: str | Path, context: str | Path, docker: str = "docker") -> list[str]:
    return [docker, "build", "--tag", image, "--file", str(dockerfile), str(context)]


def run_argv(
    image: str,
    argv: list[str],
    *,
    name: str,
    cpus: list[int],
    memory_limit: int | None,
    nofile: int,
    mounts: list[str | Path],
    env: dict[str, str] | None = None,
    workdir: str | Path | None = None,
    docker: str = "docker",
) -> list[str]:
    """``docker run`` for one server: its CPUs, memory and open files, the host's network."""
    command = [
        docker,
        "run",
        "--rm",
        "--name",
        name,
        "--init",  # a PID 1 that forwards SIGTERM and reaps workers
        "--network",
        "host",
        "--cpus",
        str(len(cpus)),
        "--cpuset-cpus",
        ",".join(map(str, cpus)),
        "--ulimit",
        f"nofile={nofile}:{nofile}",
        "--label",
        "serverbench=1",
    ]
    if memory_limit:
        # Equal swap and memory limits: no swap to hide the limit behind.
        command += ["--memory", str(memory_limit), "--memory-swap", str(memory_limit)]
    for mount in mounts:
        command += ["--volume", f"{mount}:{mount}:ro" if str(mount).endswith("/apps") else f"{mount}:{mount}"]
    for key, value in sorted((env or {}).items()):
        command += ["--env", f"{key}={value}"]
    if workdir:
        command += ["--workdir", str(workdir)]
    return [*command, image, *argv]


def inspect_argv(name: str, docker: str = "docker") -> list[str]:
    return [docker, "inspect", "--format", "{{.Id}} {{.State.Pid}}", name]


def container_cgroups(container_id: str, version: int | None) -> list[Path]:
    """Where Docker put the container's cgroup (cgroupfs and systemd drivers)."""
    if version == 1:
        candidates = [
            [CGROUP_ROOT / c / "docker" / container_id for c in V1_CONTROLLERS],
            [CGROUP_ROOT / c / "system.slice" / f"docker-{container_id}.scope" for c in V1_CONTROLLERS],
        ]
    else:
        candidates = [
            [CGROUP_ROOT / "system.slice" / f"docker-{container_id}.scope"],
            [CGROUP_ROOT / "docker" / container_id],
        ]
    for paths in candidates:
        if all(path.is_dir() for path in paths):
            return paths
    return []


@dataclass
class DockerIsolation(Isolation):
    """Limits enforced by Docker; the container's cgroup is attached once it runs."""

    container: str = ""
    container_id: str | None = None
    method: str = "docker"

    def setup(self) -> DockerIsolation:
        import resource

        self.nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        return self

    @property
    def enforced(self) -> bool:
        return bool(self.container_id)

    def preexec(self) -> None:
        """The docker client itself needs no limits: the engine applies them."""

    def attach(self, docker: str = "docker") -> bool:
        """Find the running container's cgroup; False until the container exists."""
        done = subprocess.run(inspect_argv(self.container, docker), capture_output=True, text=True, timeout=10)
        if done.returncode != 0 or not done.stdout.strip():
            return False
        container_id, pid = done.stdout.split()
        if pid == "0":
            return False
        self.container_id = container_id
        self.groups = container_cgroups(container_id, cgroup_version())
        if not self.groups:
            self.problem = "container cgroup not found; monitoring sees the docker client only"
        return True

    def describe(self) -> dict:
        return {**super().describe(), "container": self.container, "container_id": self.container_id}

    def cleanup(self, docker: str = "docker") -> None:
        """Docker owns the cgroup: remove the container, never the directories."""
        self.groups = []
        if self.container and shutil.which(docker):
            subprocess.run([docker, "rm", "--force", self.container], capture_output=True, timeout=60)
