"""Starting a server from an argv, waiting until it answers, stopping its tree.

A server may fork workers, re-parent them or start a new session, so the tree
is tracked three ways: its process group, every descendant seen while it ran,
and (where available) its cgroup. Stopping sends SIGTERM to all of them, waits
a grace period, then SIGKILLs whatever is left.
"""

from __future__ import annotations

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
from serverbench.isolation import Isolation


class ServerError(RuntimeError):
    """The server did not start, exited, or did not answer in time."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


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
        return self.proc.poll()

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
        ports = set()
        for process in self.tree():
            try:
                for conn in process.net_connections(kind="inet"):
                    if conn.status == psutil.CONN_LISTEN:
                        ports.add(conn.laddr.port)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
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
        if leftover:
            self._signal_all(signal.SIGKILL)
            psutil.wait_procs(leftover, timeout=5)
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        still = self.tree()
        return {
            "signal": "SIGKILL" if leftover else "SIGTERM",
            "exit_code_before_stop": exit_before,
            "exit_code": code,
            "killed": len(leftover),
            "survivors": [p.pid for p in still],
        }

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


def run_capture(argv: list[str], env: dict | None = None, timeout: float = 15) -> str:
    """Output of a short informational command (a version), or the error."""
    try:
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"<unavailable: {exc}>"
    text = (done.stdout + done.stderr).decode(errors="replace").strip()
    return text.splitlines()[0].strip() if text else f"<no output, exit {done.returncode}>"


def render_files(files: dict, values: dict, rundir: Path) -> dict:
    """Render a server's config templates (Jinja2) into its run directory."""
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    written = {}
    for name, template in files.items():
        text = environment.from_string((REPO_ROOT / template).read_text()).render(**values)
        target = rundir / name
        target.write_text(text)
        written[name] = str(target)
    return written
