"""Starting a server from an argv, waiting until it answers, stopping its tree.

A server may fork workers, re-parent them or start a new session, so the tree
is tracked three ways: its process group, every descendant seen while it ran,
and (where available) its cgroup. Stopping sends SIGTERM to all of them, waits
a grace period, then SIGKILLs whatever is left.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import psutil

from serverbench import REPO_ROOT
from serverbench.host.cgroups import Isolation


class ServerError(RuntimeError):
    """The server did not start, exited, or did not answer in time."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


TCP_LISTEN = "0A"


def _listening_ports_of(pid: int) -> set[int]:
    try:
        inodes = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        if not inodes:
            return set()
        ports = set()
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if len(fields) > 9 and fields[3] == TCP_LISTEN and fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        return ports
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return set()


def render_argv(argv, values: dict) -> list[str]:
    """Fill placeholders in each argv item; the result is never given to a shell."""
    return [str(item).format(**values) for item in argv]


@dataclass
class ServerProcess:
    argv: list[str]
    log_path: Path
    isolation: Isolation
    cwd: Path
    env: dict
    proc: subprocess.Popen | None = None
    seen: dict[int, psutil.Process] = field(default_factory=dict)
    started_at: float | None = None

    def start(self) -> ServerProcess:
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=self.isolation.preexec,
            )
        except OSError as exc:
            raise ServerError(f"cannot start {self.argv[0]!r}: {exc}") from exc
        finally:
            log.close()
        self.started_at = time.monotonic()
        self.tree()
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_code(self) -> int | None:
        """The exit code once the process has ended (None while running or not started)."""
        return self.proc.poll() if self.proc is not None else None

    def tree(self) -> list[psutil.Process]:
        """Live processes of the server; remembers every one it has seen."""
        try:
            root = self.seen.get(self.pid) or psutil.Process(self.pid)
            self.seen[self.pid] = root
            members = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            members = []
        for pid in self.isolation.pids():
            if pid not in self.seen:
                try:
                    self.seen[pid] = psutil.Process(pid)
                except psutil.NoSuchProcess:
                    continue
        for process in members:
            self.seen.setdefault(process.pid, process)
        alive = []
        for process in self.seen.values():
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
            except psutil.NoSuchProcess:
                pass
        return alive

    def listening_ports(self) -> set[int]:
        """TCP ports the tree listens on, read in each process's own network
        namespace (/proc/PID/net), so a server in a netns is seen as well."""
        ports = set()
        for process in self.tree():
            ports |= _listening_ports_of(process.pid)
        return ports

    def wait_ready(self, host: str, port: int, timeout: float) -> float:
        """Poll until the port accepts connections; return seconds taken."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            code = self.exit_code()
            if code is not None:
                raise ServerError(f"server exited with code {code} before listening")
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    pass
                if port not in self.listening_ports():
                    raise ServerError(f"port {port} answers, but not from the server's processes")
                return time.monotonic() - self.started_at
            except OSError:
                pass
            if time.monotonic() >= deadline:
                raise ServerError(f"server did not listen on {host}:{port} within {timeout:g} s")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)

    def stop(self, grace: float) -> dict:
        """TERM the whole tree, KILL what remains after ``grace`` seconds."""
        if self.proc is None:
            return {"signal": None, "exit_code": None, "killed": 0}
        self.tree()
        exit_before = self.proc.poll()
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and (self.proc.poll() is None or self.tree()):
            time.sleep(0.05)
        leftover = self.tree()
        code = self.kill(leftover)
        still = self.tree()
        return {
            "signal": "SIGKILL" if leftover else "SIGTERM",
            "exit_code_before_stop": exit_before,
            "exit_code": code,
            "killed": len(leftover),
            "survivors": [p.pid for p in still],
        }

    def kill(self, leftover: list[psutil.Process]) -> int | None:
        """SIGKILL what is ``leftover`` of the tree (if anything), wait for it; the exit code."""
        if leftover:
            self._signal_all(signal.SIGKILL)
            psutil.wait_procs(leftover, timeout=5)
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

    def _signal_all(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for process in self.tree():
            try:
                process.send_signal(sig)
            except psutil.NoSuchProcess:
                pass


def render_files(files: dict, values: dict, rundir: Path) -> dict:
    """Render a server's config templates (Jinja2) into its run directory.

    Templates are looked up from the repository root, so one may extend or
    include another (``{% extends "workflow/templates/apache-base.conf" %}``).
    """
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(REPO_ROOT)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    written = {}
    for name, template in files.items():
        target = rundir / name
        target.write_text(environment.get_template(template).render(**values))
        written[name] = str(target)
    return written


class ServerGroup:
    """A front process and the processes behind it, handled as one server.

    For a server behind a front (an app on FastCGI behind nginx) the backend
    starts first and must have its socket before the front starts; both share
    the cell's cgroup, are monitored together and stopped front first.
    """

    def __init__(self, members: list[ServerProcess]):
        self.members = members
        self.front = members[-1]
        self.isolation = self.front.isolation

    @property
    def pid(self) -> int:
        return self.front.pid

    @property
    def proc(self):
        return self.front.proc

    def exit_code(self) -> int | None:
        for member in self.members:
            if member.exit_code() is not None:
                return member.exit_code()
        return None

    def all_exited(self) -> bool:
        """Whether every member has ended (``exit_code`` says whether one has)."""
        return all(member.exit_code() is not None for member in self.members)

    def tree(self) -> list[psutil.Process]:
        alive = {}
        for member in self.members:
            if member.proc is not None:
                alive.update((p.pid, p) for p in member.tree())
        return list(alive.values())

    def wait_ready(self, host: str, port: int, timeout: float) -> float:
        return self.front.wait_ready(host, port, timeout)

    def kill(self) -> None:
        """SIGKILL to every process of every member, waited for: the last resort where a
        stop went wrong (a harness bug), so no server outlives its job."""
        for member in self.members:
            if member.proc is not None:
                member.kill(member.tree())

    def stop(self, grace: float) -> dict:
        reports = [m.stop(grace) for m in reversed(self.members) if m.proc is not None]
        report = dict(reports[0]) if reports else {"signal": None, "exit_code": None, "killed": 0, "survivors": []}
        report["survivors"] = sorted({pid for r in reports for pid in r.get("survivors", [])})
        report["killed"] = sum(r.get("killed", 0) for r in reports)
        report["members"] = reports
        return report


def wait_for_socket(path: str, members: list[ServerProcess], timeout: float) -> None:
    """Wait until a Unix socket (or a host:port) accepts connections."""
    deadline = time.monotonic() + timeout
    while True:
        for member in members:
            if member.exit_code() is not None:
                raise ServerError(f"{member.argv[0]} exited with code {member.exit_code()} before {path} was ready")
        try:
            if ":" in path and not path.startswith("/"):
                host, _, port = path.rpartition(":")
                socket.create_connection((host, int(port)), timeout=0.5).close()
            else:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(0.5)
                    sock.connect(path)
            return
        except OSError:
            if time.monotonic() >= deadline:
                raise ServerError(f"{path} did not accept connections within {timeout:g} s") from None
            time.sleep(0.05)


def put_control(socket_path: str, path: str, body: bytes, timeout: float = 30) -> tuple[int, str]:
    """PUT a JSON document to an HTTP API on a Unix socket (NGINX Unit's control API)."""
    return control_request(socket_path, "PUT", path, body, timeout)


def control_request(
    socket_path: str, method: str, path: str, body: bytes | None = None, timeout: float = 30
) -> tuple[int, str]:
    """One request to an HTTP API on a Unix socket: its status and answer."""

    class UnixConnection(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(socket_path)

    conn = UnixConnection("localhost", timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()
