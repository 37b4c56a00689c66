"""Counting a server's syscalls, context switches and CPU time with perf (no
valgrind, which adds syscalls of its own; no hardware PMU: tracepoints and
software events), over every process and thread the server starts.

- ``perf stat`` (``stat_argv``, ``read_stat``): exact counters of the
  ``raw_syscalls:sys_enter`` tracepoint, ``context-switches`` and
  ``task-clock`` (CPU milliseconds).
- ``perf trace -s`` (``trace_argv``, ``read_trace``): a summary per thread of
  each syscall by name. It reads events through a ring buffer and can miss one
  in some tens of thousands without saying so (seen here: 499 getppid of 500
  in one try of five), so it gives the names, and perf stat the totals. Where
  perf does say it lost events (``LOST n events``) the summary is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_THREAD = re.compile(r"^\s*(?P<command>.+?) \((?P<tid>\d+)\), (?P<events>\d+) events")
_ROW = re.compile(r"^\s+(?P<name>[a-z_0-9]+)\s+(?P<calls>\d+)\s+(?P<errors>\d+)\s+[\d.]+")
_LOST = re.compile(r"LOST (\d+) events", re.I)


class PerfError(ValueError):
    """Counts perf did not write, or wrote short (missing, not counted, events lost)."""


STAT_EVENTS = {"raw_syscalls:sys_enter": "syscalls", "context-switches": "context_switches", "task-clock": "cpu_ms"}
# The server in a process group of its own, not perf's: Apache's prefork MPM TERMs its whole
# group at its stop, and perf, TERMed too, ended before it wrote a count (mod_perl, mod_php,
# mod_python: "counted only []"). perf follows it there all the same (it counts its children).
OWN_GROUP = ["setsid"]


def stat_argv(output: Path) -> list[str]:
    """The prefix that runs a server under perf stat's counters (CSV to ``output``)."""
    return ["perf", "stat", "-x,", "-o", str(output), "-e", ",".join(STAT_EVENTS), "--", *OWN_GROUP]


def read_stat(path: str | Path) -> dict[str, float]:
    """perf stat's counters by our names: syscalls, context_switches, cpu_ms."""
    path = Path(path)
    if not path.exists():
        raise PerfError("perf stat wrote no counts")
    counts = {}
    for line in path.read_text(errors="replace").splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[2] in STAT_EVENTS:
            if not fields[0].replace(".", "", 1).isdigit():  # "<not counted>", "<not supported>"
                raise PerfError(f"perf stat could not count {fields[2]}: {fields[0]}")
            counts[STAT_EVENTS[fields[2]]] = float(fields[0])
    if set(counts) != set(STAT_EVENTS.values()):
        raise PerfError(f"perf stat counted only {sorted(counts)}")
    return counts


def trace_argv(output: Path) -> list[str]:
    """The prefix that runs a server under perf trace's summary."""
    return ["perf", "trace", "-s", "-o", str(output), "--", *OWN_GROUP]


@dataclass
class ThreadSyscalls:
    command: str
    tid: int
    calls: dict[str, int] = field(default_factory=dict)


def read_trace(path: str | Path) -> list[ThreadSyscalls]:
    """Every thread's syscalls by name, as perf trace's summary gives them."""
    path = Path(path)
    if not path.exists():
        raise PerfError("perf trace wrote no summary")
    text = path.read_text(errors="replace")
    lost = _LOST.search(text)
    if lost:
        raise PerfError(f"perf trace lost {lost.group(1)} events")
    threads: list[ThreadSyscalls] = []
    for line in text.splitlines():
        header = _THREAD.match(line)
        if header:
            threads.append(ThreadSyscalls(header["command"], int(header["tid"])))
            continue
        row = _ROW.match(line)
        if row and threads:
            threads[-1].calls[row["name"]] = threads[-1].calls.get(row["name"], 0) + int(row["calls"])
    if not threads:
        raise PerfError("perf trace's summary names no thread")
    return threads


def totals(threads: list[ThreadSyscalls]) -> dict[str, int]:
    """Calls per syscall name over every thread."""
    summed: dict[str, int] = {}
    for thread in threads:
        for name, calls in thread.calls.items():
            summed[name] = summed.get(name, 0) + calls
    return summed
