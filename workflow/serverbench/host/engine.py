"""The Docker engine a docker-isolated run talks to, and the one serverbench starts.

An engine that already answers (``DOCKER_HOST``, or the default socket) is
used as it is and never stopped. Otherwise serverbench starts Debian's
``dockerd`` (installed by ``scripts/install --docker``) so that it touches
nothing else on the host: its data, sockets and log under ``docker.state_dir``,
no bridge network and no iptables rules (containers use the host's network,
bound to loopback), its API on a Unix socket only root can open, and no TCP
port at all. Whoever started it stops it; containers serverbench labelled are
removed first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

INFO_TIMEOUT_S = 10
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
LABEL = "serverbench=1"


def dockerd_argv(state_dir: Path) -> list[str]:
    """An engine that owns only ``state_dir`` and changes no network setting of the host."""
    return [
        "dockerd",
        "--host",
        f"unix://{state_dir / 'docker.sock'}",
        "--group",
        "root",  # the socket is root:root 0660: only root can drive the engine
        "--data-root",
        str(state_dir / "data"),
        "--exec-root",
        str(state_dir / "exec"),
        "--pidfile",
        str(state_dir / "dockerd.pid"),
        "--bridge",
        "none",  # no docker0, no 172.17.x addresses
        "--iptables=false",
        "--ip-forward=false",
        "--ip-masq=false",
        "--userland-proxy=false",
    ]


def engine_problem(env: dict | None = None) -> str | None:
    """Why no Docker engine answers with this environment's ``DOCKER_HOST``, or None."""
    env = env if env is not None else dict(os.environ)
    if shutil.which("docker", path=env.get("PATH")) is None:
        return "the docker client is not installed (scripts/install --docker installs Debian's engine)"
    if not env.get("DOCKER_HOST") and not _dockerd_running():
        # Asking the default socket would start a socket-activated docker.service,
        # with the bridge and iptables rules this project never wants.
        return "no dockerd runs and DOCKER_HOST is not set"
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=INFO_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return f"no Docker engine answered `docker info` within {INFO_TIMEOUT_S} s"
    if done.returncode != 0 or not done.stdout.strip():
        reason = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine answers `docker info`: {reason}"
    return None


def _dockerd_running() -> bool:
    return any(process.info["name"] == "dockerd" for process in psutil.process_iter(["name"]))


@dataclass
class Engine:
    """serverbench's own engine, described by its state directory."""

    state_dir: Path

    @property
    def socket(self) -> Path:
        return self.state_dir / "docker.sock"

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    @property
    def log(self) -> Path:
        return self.state_dir / "dockerd.log"

    def env(self, base: dict | None = None) -> dict:
        return {**(base if base is not None else os.environ), "DOCKER_HOST": self.host}

    def pid(self) -> int | None:
        try:
            pid = int((self.state_dir / "dockerd.pid").read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def answers(self) -> bool:
        return self.socket.is_socket() and engine_problem(self.env()) is None

    def start(self) -> None:
        if shutil.which("dockerd") is None:
            raise EngineError("dockerd is not installed: run scripts/install --docker (Debian's docker.io)")
        for sub in ("data", "exec"):
            (self.state_dir / sub).mkdir(parents=True, exist_ok=True)
        self.state_dir.chmod(0o700)
        with open(self.log, "ab") as log:
            process = subprocess.Popen(
                dockerd_argv(self.state_dir), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.answers():
            if process.poll() is not None:
                raise EngineError(f"dockerd exited ({process.returncode}) while starting; see {self.log}")
            if time.monotonic() > deadline:
                process.kill()
                raise EngineError(f"dockerd did not answer within {START_TIMEOUT_S} s; see {self.log}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Remove serverbench's containers, then end dockerd (and the containerd it runs)."""
        pid = self.pid()
        if pid is None:
            return
        remove_labelled_containers(self.env())
        try:
            dockerd = psutil.Process(pid)
            tree = [dockerd, *dockerd.children(recursive=True)]  # its containerd and shims
        except psutil.NoSuchProcess:
            return
        dockerd.terminate()
        _, alive = psutil.wait_procs(tree, timeout=STOP_TIMEOUT_S)  # reaps it where it is our child
        for process in alive:
            process.kill()
        psutil.wait_procs(alive, timeout=5)
        self._unmount_leftovers()

    def _unmount_leftovers(self) -> None:
        """dockerd leaves its reference to the host's network namespace mounted (exec/netns)."""
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for mount in sorted((m for m in mounts if m.startswith(f"{self.state_dir}/")), reverse=True):
            subprocess.run(["umount", mount], capture_output=True, timeout=10)


class EngineError(RuntimeError):
    """No engine could be found or started."""


def remove_labelled_containers(env: dict | None = None) -> list[str]:
    """Remove every container serverbench started (label ``serverbench=1``), running or not."""
    listed = subprocess.run(
        ["docker", "ps", "--all", "--quiet", "--filter", f"label={LABEL}"],
        capture_output=True,
        text=True,
        timeout=INFO_TIMEOUT_S,
        env=env,
    )
    ids = listed.stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "--force", *ids], capture_output=True, timeout=60, env=env)
    return ids


@dataclass
class Session:
    """The engine a run uses: DOCKER_HOST for every docker call, and who must stop it."""

    env: dict
    engine: Engine | None = None  # set when this session started serverbench's engine

    @property
    def host(self) -> str | None:
        return self.env.get("DOCKER_HOST")

    def close(self) -> None:
        if self.engine is not None:
            self.engine.stop()
            self.engine = None


def state_dir(config: dict) -> Path:
    return Path((config.get("docker") or {}).get("state_dir") or "/var/lib/serverbench/docker")


def connect(config: dict, base_env: dict | None = None) -> dict:
    """The environment docker calls need: an answering engine's ``DOCKER_HOST``.

    The host's own engine wins; else serverbench's, if it runs. Raises
    EngineError saying why when neither answers (nothing is started here:
    cells never start an engine, the run does).
    """
    env = dict(base_env if base_env is not None else os.environ)
    problem = engine_problem(env)
    if problem is None:
        return env
    own = Engine(state_dir(config))
    if own.answers():
        return own.env(env)
    raise EngineError(f"{problem}; serverbench's engine ({own.socket}) is not running either")


def open_session(config: dict, base_env: dict | None = None) -> Session:
    """Use the engine that answers, or start serverbench's (and remember to stop it)."""
    env = dict(base_env if base_env is not None else os.environ)
    try:
        return Session(connect(config, env))
    except EngineError:
        pass
    own = Engine(state_dir(config))
    own.start()
    return Session(own.env(env), engine=own)
