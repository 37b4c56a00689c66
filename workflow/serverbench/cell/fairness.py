"""How evenly a server serves its connections.

A server with one worker under 100 kept-alive connections answers one of them
while the other 99 wait in its accept queue; the load tool reports no errors
and tiny latencies (the 2018 re-check's trap). Two ways to see it:

- ``connections`` (default): during the measured run itself, the kernel's
  counters of the client's sockets (bytes received per connection, as
  ``ss -ti`` shows them, read in-process over netlink: ``sockdiag``) are
  read at intervals. Every answer of a workload has the same
  size, so a connection's share of the bytes is its share of the answers. It
  costs no extra phase and describes exactly the run whose numbers are reported.
- ``h2load``: after the load, ``h2load --h1`` at the same concurrency reports
  per-client req/s. An independent second opinion; it runs under a deadline
  because it may never exit against a server that closes connections.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import threading
import time

from serverbench.cell import loadgen, parsers
from serverbench.host import sockdiag
from serverbench.plan.shapes import Profile

CONNECTED_SHARE = 0.9  # the window spans snapshots holding this share of the most connections seen
SOCKET_LINE = re.compile(r"^\S+\s+\S+\s+(\S+)\s+\S+\s+(.*)$")
BYTES_RECEIVED = re.compile(r"\bbytes_received:(\d+)")


def parse_ss(text: str) -> dict[str, int]:
    """``ss -tinHO`` lines: the client's local address and the bytes it received."""
    sockets = {}
    for line in text.splitlines():
        found = SOCKET_LINE.match(line.strip())
        if not found:
            continue
        received = BYTES_RECEIVED.search(found.group(2))
        # A connection that never got a byte has no bytes_received field.
        sockets[found.group(1)] = int(received.group(1)) if received else 0
    return sockets


class ConnectionSampler:
    """Snapshots of the client's established connections to ``host:port``: read over netlink
    in-process (``serverbench.host.sockdiag``), or with ``ss`` where the kernel refuses that."""

    def __init__(self, host: str, port: int, interval: float, env: dict | None = None, slow_down: bool = True):
        self.argv = ["ss", "-tinHO", "state", "established", "dst", f"{host}:{port}"]
        try:
            self.reader: sockdiag.ClientSockets | None = sockdiag.ClientSockets(host, port)
        except sockdiag.SockDiagError:
            self.reader = None
        self.interval, self.slow_down = interval, slow_down
        self.env = env
        self.snapshots: list[tuple[float, dict[str, int]]] = []
        self.cpu_s = 0.0
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="serverbench-connections", daemon=True)

    def __enter__(self) -> ConnectionSampler:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self.reader is not None:
            self.reader.close()

    def _run(self) -> None:
        wait = self.interval
        while not self._stop.wait(wait):
            taken = time.monotonic() - self._t0
            try:
                sockets = self._snapshot()
            except (OSError, RuntimeError) as exc:
                self.error = str(exc)
                return
            self.snapshots.append((round(taken, 4), sockets))
            # Thousands of sockets take a while to read: never spend more than a third of the time on it;
            # and a run of unknown length (slow_down) is sampled less often as it goes (up to 1 s).
            elapsed = time.monotonic() - self._t0
            growing = min(1.0, elapsed / 10) if self.slow_down else 0.0
            wait = max(self.interval, growing, 2 * (elapsed - taken))

    def _snapshot(self) -> dict[str, int]:
        """One reading of the sockets; its CPU time (this thread's, or ss's) is added to ``cpu_s``."""
        if self.reader is not None:
            started = time.thread_time()
            sockets = self.reader.snapshot()
            self.cpu_s += time.thread_time() - started
            return sockets
        proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env)
        out = proc.stdout.read().decode(errors="replace")
        proc.stdout.close()
        # wait4, not wait: the sampler's own CPU time is part of what it reports.
        _, status, usage = os.wait4(proc.pid, 0)
        self.cpu_s += usage.ru_utime + usage.ru_stime
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"ss exited {os.waitstatus_to_exitcode(status)}: {out.strip()[:300]}")
        return parse_ss(out)

    def summary(self, requests_per_s: float | None, starved_share: float) -> dict:
        tool = "sock_diag" if self.reader is not None else "ss"
        result = {"method": "connections", "tool": tool, "interval_s": self.interval}
        if self.reader is None:
            result["argv"] = self.argv
        result["sampler_cpu_s"] = round(self.cpu_s, 4)
        if self.error:
            return dict(result, status="failed", reason=self.error)
        return dict(result, **summarise(self.snapshots, requests_per_s, starved_share))


def summarise(
    snapshots: list[tuple[float, dict[str, int]]], requests_per_s: float | None, starved_share: float
) -> dict:
    """Each connection's share of the answers between two snapshots.

    The window runs from the first to the last snapshot holding nearly all
    connections the tool opened, so connecting and closing are left out.
    Connections present at both ends are compared; those opened inside the
    window are counted (a kept-alive run opens none).
    """
    most = max((len(sockets) for _, sockets in snapshots), default=0)
    full = [i for i, (_, sockets) in enumerate(snapshots) if most and len(sockets) >= CONNECTED_SHARE * most]
    if len(full) < 2:
        return {"status": "too short", "reason": f"{len(snapshots)} snapshots, {len(full)} with the connections open"}
    (t_a, first), (t_b, last) = snapshots[full[0]], snapshots[full[-1]]
    kept = sorted(set(first) & set(last))
    if len(kept) < CONNECTED_SHARE * len(last):
        return {
            "status": "not applicable",
            "reason": f"only {len(kept)} of {len(last)} connections lasted the window: connections are not kept",
        }
    received = [last[key] - first[key] for key in kept]
    mean = statistics.fmean(received)
    window = t_b - t_a
    if not mean:
        # Nobody was served, so nobody was served less than the others: that is its own condition.
        return {
            "status": "no traffic",
            "reason": f"no connection received a byte in {window:.2f} s",
            "connections": len(kept),
        }
    result = {
        "status": "ok",
        "window_s": round(window, 4),
        "snapshots": len(snapshots),
        "connections": len(kept),
        # At 10,000 connections a server's accept queue may hold only its backlog.
        "connections_established_max": most,
        "connections_opened": len(set(last) - set(first)),
        "bytes_min": min(received),
        "bytes_max": max(received),
        "bytes_mean": round(mean, 1),
        "idle_connections": sum(1 for value in received if value == 0),
        "starved_share": starved_share,
        "starved_connections": sum(1 for value in received if value < starved_share * mean),
        "min_over_mean": round(min(received) / mean, 4),
        "max_over_mean": round(max(received) / mean, 4),
        "cv": round(statistics.pstdev(received) / mean, 4),
    }
    if requests_per_s:
        # Answers of one workload have one size, so bytes shares are answer shares.
        per_connection = requests_per_s / len(kept)
        result.update(
            client_rps_mean=round(per_connection, 2),
            client_rps_min=round(per_connection * min(received) / mean, 2),
            client_rps_max=round(per_connection * max(received) / mean, 2),
            **connection_waits(received, requests_per_s, window),
        )
    return result


def connection_waits(received: list[int], requests_per_s: float, window_s: float) -> dict:
    """What a user of each connection waited between answers, over all connections, the starved
    ones included: 1 / its answers per second; a connection answered nothing in the window waited
    at least the window (counted as the window: the figures are lower bounds where it is)."""
    total = sum(received)
    waits = [total / (requests_per_s * value) if value else window_s for value in received]
    if len(waits) < 2:
        return {}
    cuts = statistics.quantiles(waits, n=10, method="inclusive")
    return {
        "wait_p50_ms": round(statistics.median(waits) * 1000, 3),
        "wait_p90_ms": round(cuts[8] * 1000, 3),
        "waits_at_least_window": sum(1 for value in received if not value),
    }


def sampling_interval(expected_s: float | None) -> float:
    """About six snapshots per run, between 0.4 s and 1 s apart (each ss costs
    a few ms of CPU on the client's side); a run of a number of requests
    (ab -n) may last a fraction of a second: 0.05 s."""
    if expected_s is None:
        return 0.05
    return min(1.0, max(0.4, expected_s / 6))


def h2load_probe(url: str, concurrency: int, seconds: float, profile: Profile, env: dict) -> dict:
    """Per-client req/s from ``h2load --h1`` run after the measured load."""
    if shutil.which("h2load", path=env["PATH"]) is None:
        return {"method": "h2load", "status": "skipped", "reason": "h2load not found on PATH (nghttp2-client)"}
    argv = ["h2load", "--h1", "-c", str(concurrency), "-t", "1", "-D", f"{seconds:g}", url]
    run = loadgen.run(argv, profile.client_cpus, seconds + 2 * profile.timeout + 10, env)
    result = {"method": "h2load", "tool": "h2load", "argv": argv, "raw": run.output[-4000:], "timed_out": run.timed_out}
    try:
        result.update(parsers.parse_h2load_fairness(run.output), status="ok")
    except parsers.ParseError as exc:
        result.update(status="failed", reason=str(exc))
    return result
