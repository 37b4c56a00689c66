"""Docker as the isolation backend, as the seed study ran its servers.

The server runs in a container from the language's image (built from
``envs/docker/*.Dockerfile``) with the profile's CPUs and memory given to
Docker (``--cpus``, ``--cpuset-cpus``, ``--memory``); the network is the
host's, so ports and the load tool stay as they are. Once the container runs,
its cgroup is found and read exactly like serverbench's own, so monitoring,
OOM kills and stopping work unchanged. Every command is an argv.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from serverbench.host.cgroups import CGROUP_ROOT, V1_CONTROLLERS, Isolation, cgroup_version
from serverbench.host.engine import LABEL

IMAGE_VENV = "/opt/serverbench/venv"  # {venv} inside the servers image (envs/docker/servers.Dockerfile)


def probe_argv(image: str, command: list[str]) -> list[str]:
    """A short command (a version) in the image: no network, removed when done."""
    return ["docker", "run", "--rm", "--network", "none", "--label", LABEL, image, *command]


def run_argv(
    image: str,
    argv: list[str],
    *,
    name: str,
    cpus: list[int],
    memory_limit: int | None,
    nofile: int,
    cpu_quota: float | None = None,
    mounts: list[str | Path],
    read_only: list[str | Path] = (),
    env: dict[str, str] | None = None,
    workdir: str | Path | None = None,
) -> list[str]:
    """``docker run`` for one server: its CPUs, memory and open files, the host's network."""
    command = [
        "docker",
        "run",
        # Not --rm: a container that died (the kernel's OOM killer took its PID 1) keeps its
        # State.OOMKilled until cleanup() removes it, after its cgroup went with it.
        "--name",
        name,
        "--init",  # a PID 1 that forwards SIGTERM and reaps workers
        "--network",
        "host",
        "--cpus",
        str(cpu_quota or len(cpus)),
        "--cpuset-cpus",
        ",".join(map(str, cpus)),
        "--ulimit",
        f"nofile={nofile}:{nofile}",
        "--label",
        LABEL,  # how the engine's owner finds and removes what a killed run left
    ]
    if memory_limit:
        # Equal swap and memory limits: no swap to hide the limit behind.
        command += ["--memory", str(memory_limit), "--memory-swap", str(memory_limit)]
    # Mounted at the same paths, so a rendered command means the same inside.
    for mount in mounts:
        command += ["--volume", f"{mount}:{mount}"]
    for mount in read_only:
        command += ["--volume", f"{mount}:{mount}:ro"]
    for key, value in sorted((env or {}).items()):
        command += ["--env", f"{key}={value}"]
    if workdir:
        command += ["--workdir", str(workdir)]
    return [*command, image, *argv]


def inspect_argv(name: str) -> list[str]:
    return ["docker", "inspect", "--format", "{{.Id}} {{.State.Pid}}", name]


def oom_killed_argv(name: str) -> list[str]:
    return ["docker", "inspect", "--format", "{{.State.OOMKilled}}", name]


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
    docker_env: dict | None = None  # DOCKER_HOST of the engine the cell uses
    engine_oom_kills: int | None = None  # State.OOMKilled once the container is gone (1 or 0)

    def setup(self) -> DockerIsolation:
        import resource

        self.nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        return self

    @property
    def enforced(self) -> bool:
        return bool(self.container_id)

    def preexec(self) -> None:
        """The docker client itself needs no limits: the engine applies them."""

    def attach(self) -> bool:
        """Find the running container's cgroup; False until the container exists."""
        done = subprocess.run(
            inspect_argv(self.container), capture_output=True, text=True, timeout=10, env=self.docker_env
        )
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

    def _read_oom_kills(self) -> int | None:
        """The cgroup's count while it exists; once the container is gone with its cgroup
        (the OOM killer can take its PID 1 before a sample reads the group), the engine's
        State.OOMKilled, asked once: the container has exited, so its answer is final (the
        monitor reads this every sample)."""
        counted = super()._read_oom_kills()
        gone = bool(self.groups) and not any(group.is_dir() for group in self.groups)
        if counted is not None or not gone:
            return counted
        if self.engine_oom_kills is None:
            done = subprocess.run(
                oom_killed_argv(self.container), capture_output=True, text=True, timeout=10, env=self.docker_env
            )
            self.engine_oom_kills = {"true": 1, "false": 0}.get(done.stdout.strip()) if done.returncode == 0 else None
        return self.engine_oom_kills

    def describe(self) -> dict:
        return {**super().describe(), "container": self.container, "container_id": self.container_id}

    def cleanup(self) -> None:
        """Docker owns the cgroup: remove the container (also after a fault), never the directories."""
        self.groups = []
        if self.container:
            subprocess.run(
                ["docker", "rm", "--force", self.container], capture_output=True, timeout=60, env=self.docker_env
            )
