"""Running a load tool pinned to the client CPUs and keeping its raw output."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from serverbench.cell.servers import render_argv
from serverbench.host.cgroups import CpuQuota, raise_nofile
from serverbench.plan.shapes import Profile

WRK_REPORT = Path(__file__).with_name("wrk_report.lua")


class ToolMissing(RuntimeError):
    """The load tool's program is not installed."""


@dataclass
class ToolRun:
    argv: list[str]
    output: str
    exit_code: int
    wall_s: float
    cpu_s: float
    timed_out: bool

    @property
    def cpu_percent(self) -> float:
        return 100 * self.cpu_s / self.wall_s if self.wall_s else 0.0


def tool_values(profile: Profile, concurrency: int, url: str, duration: float | None = None) -> dict:
    """Placeholder values for a load tool's argv (config.TOOL_PLACEHOLDERS)."""
    return {
        "url": url,
        "concurrency": concurrency,
        "duration": f"{duration if duration is not None else profile.duration:g}",
        # ab refuses fewer requests than connections.
        "requests": max(profile.requests, concurrency),
        "timeout": f"{profile.timeout:g}",
        "client_threads": max(1, min(profile.client_threads or len(profile.client_cpus), concurrency)),
        "wrk_report": str(WRK_REPORT),
        "rate": f"{profile.rate or 0:g}",
    }


def lua_string(text: str) -> str:
    """``text`` as a Lua string literal: printable ASCII as it is, every other byte (UTF-8
    included) and the quote and backslash as decimal escapes, which every Lua reads."""
    plain = {byte for byte in range(32, 127)} - {ord('"'), ord("\\")}
    return '"' + "".join(chr(b) if b in plain else f"\\{b}" for b in text.encode()) + '"'


def request_script(directory: Path, requests: list[dict]) -> Path:
    """A wrk script that sends ``requests`` in turn (path, and any method, body, headers: one
    workload's, or a mix's in plan.apps.request_order), each thread from the first, and
    reports as wrk_report.lua does. wrk.format adds a body's Content-Length."""

    def entry(request: dict) -> str:
        headers = ", ".join(f"[{lua_string(k)}] = {lua_string(v)}" for k, v in request.get("headers", {}).items())
        body = lua_string(request["body"]) if "body" in request else "nil"
        method = lua_string(request.get("method", "GET"))
        return (
            f"  {{method = {method}, path = {lua_string(request['path'])}, headers = {{{headers}}}, body = {body}}},\n"
        )

    script = Path(directory) / "requests.lua"
    script.write_text(
        "local requests = {\n" + "".join(entry(request) for request in requests) + "}\n"
        "local turn = 0\n"
        "request = function()\n"
        "  turn = turn % #requests + 1\n"
        "  local r = requests[turn]\n"
        "  return wrk.format(r.method, r.path, r.headers, r.body)\n"
        "end\n" + WRK_REPORT.read_text()
    )
    return script


def _interrupt(pid: int) -> None:
    """SIGINT to the tool's process group (it may just have exited: nothing to do then)."""
    try:
        os.killpg(pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def build_argv(tool: dict, values: dict, path: str | None = None) -> list[str]:
    """The tool's argv; ``path`` is the PATH it will run with (default this process's)."""
    argv = render_argv(tool["command"], values)
    if shutil.which(argv[0], path=path or os.environ.get("PATH")) is None:
        raise ToolMissing(f"load tool {argv[0]!r} not found on PATH")
    return argv


def run(
    argv: list[str],
    cpus: list[int],
    deadline_s: float,
    env: dict | None = None,
    cpu_quota: float | None = None,
    interrupt_at_s: float | None = None,
) -> ToolRun:
    """Run a tool to completion (or kill it at the deadline), with its own CPU time;
    ``cpu_quota`` (CPUs' worth of time) caps it further with a cgroup; ``interrupt_at_s``
    sends it SIGINT then (wrk stops, reports and exits 0): a run shorter than its argv's."""
    with CpuQuota(cpu_quota) if cpu_quota else contextlib.nullcontext() as quota:

        def pin():
            if quota is not None:
                quota.enter()
            os.sched_setaffinity(0, cpus)
            raise_nofile()

        return _run_pinned(argv, pin, deadline_s, env, interrupt_at_s)


def _run_pinned(
    argv: list[str], pin, deadline_s: float, env: dict | None, interrupt_at_s: float | None = None
) -> ToolRun:
    started = time.monotonic()
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=pin,
            start_new_session=True,
        )
        expired = threading.Event()

        def expire():
            expired.set()
            os.killpg(proc.pid, signal.SIGKILL)

        # The deadline is a timer, so the harness blocks in wait4 instead of polling (no CPU
        # taken from the client's CPUs); wait4 gives this child's own rusage.
        timers = [threading.Timer(deadline_s, expire)]
        if interrupt_at_s is not None:
            timers.append(threading.Timer(interrupt_at_s, _interrupt, (proc.pid,)))
        for timer in timers:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            # Interrupted: the tool must not outlive the job.
            os.killpg(proc.pid, signal.SIGKILL)
            os.waitpid(proc.pid, 0)
            raise
        finally:
            for timer in timers:
                timer.cancel()
        timed_out = expired.is_set()
        proc.returncode = os.waitstatus_to_exitcode(status)
        sink.seek(0)
        output = sink.read().decode(errors="replace")
    return ToolRun(
        argv=argv,
        output=output,
        exit_code=proc.returncode,
        wall_s=time.monotonic() - started,
        cpu_s=usage.ru_utime + usage.ru_stime,
        timed_out=timed_out,
    )
