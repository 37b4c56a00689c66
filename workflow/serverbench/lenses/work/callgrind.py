"""Reading callgrind's output: the user-space instructions of one process, by object.

Callgrind (valgrind's call-graph tool, no cache simulation) writes one file per
process (``--callgrind-out-file=DIR/callgrind.%p``). Its format
(valgrind.org/docs/manual/cl-format.html) compresses names: ``ob=(3) /path``
defines object 3, a later ``ob=(3)`` refers to it. A cost line is a position
and the event counts (only ``Ir`` here); the line after ``calls=`` is the
*inclusive* cost of a call, already counted where the callee ran, so it is
skipped. The self costs of a file add up to its ``totals:`` line, which is
checked: a file cut short (a process killed with SIGKILL writes nothing, one
killed mid-dump writes part) is refused, not half counted.

A process's count is its ``summary:`` line, not its ``totals:``. For a worker
forked by uWSGI's master the two differ, and only the summary repeats: over
four identical lives of one server the serving worker's summary was
170,374,413 to 170,379,644 instructions while its totals were 170.6 million
in two lives and 184.3 million in the other two (the excess in CPython's
deallocation functions). The objects' costs come from the cost lines, so
they are scaled to the summary: their shares are callgrind's, their sum the
summary.

A forked process starts with a copy of its parent's counts (callgrind keeps
them in memory, and ``fork`` copies memory): a child that did nothing itself
wrote its parent's 219 million instructions up to the fork. For workers forked
once at start that cancels in the marginal, but a worker forked while the
counted requests run (Starlet's respawn every 100 requests, its default
max-reqs-per-child; an autoscaler's new worker) would carry its parent's whole
history into the figure: 2.6 million instructions per hello request for
Starlet against Starman's 243 thousand. So every process dumps its counts just
before it forks (``DUMP_BEFORE_FORK``: callgrind writes a part, ``callgrind.PID.N``, and zeroes
its counters), the child starts from zero, and a process's count is the sum of
its parts (``read_processes``).

The interpreter's cyclic garbage collector is counted apart as well: the
inclusive cost of every call into it (``COLLECTORS``), read from the lines
after ``calls=`` that are skipped above. A Python worker's collections are set
off by allocations, some of them its own loop's, once a second: by the clock,
which valgrind stretches. Over two lives held alike, a whole-heap collection
fell inside one life and outside the other and moved gunicorn's figure by 6%
(docs/work.md); apart, it is a figure of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_NAMED = re.compile(r"^\((\d+)\)(?:\s(.*))?$")
_COST_START = tuple("0123456789+-*")
# The entry of CPython's cyclic collector (3.8 to 3.13): every collection, each generation.
COLLECTORS = frozenset({"gc_collect_main"})
# Functions of CPython's collector that a process allocating its objects runs, when its
# interpreter names them: Debian's libpython3.11 is stripped of them (its static functions are
# addresses in callgrind's files), so under uWSGI, Unit or mod_wsgi the collector cannot be
# counted apart. A process that ran none of these has its collector counted with the rest.
COLLECTOR_NAMED_BY = frozenset({*COLLECTORS, "_PyObject_GC_Link"})


# Callgrind's options that make each process's count its own: a dump (and zeroing) at each fork.
DUMP_BEFORE_FORK = ["--dump-before=fork"]


class CallgrindError(ValueError):
    """A callgrind file that cannot be counted (empty, cut short, unknown format)."""


@dataclass
class ProcessCount:
    """One process's user-space instructions, as callgrind counted them."""

    pid: int
    command: str
    instructions: int
    by_object: dict[str, int] = field(default_factory=dict)
    # Of them, in the cyclic collector (COLLECTORS) and what it called: finalizers, frees.
    collector: int = 0
    collector_named: bool = False  # the process ran CPython's collector by name (COLLECTOR_NAMED_BY)


def _name(value: str, names: dict[str, str]) -> str:
    """An object name, resolving callgrind's ``(n) name`` compression."""
    match = _NAMED.match(value.strip())
    if not match:
        return value.strip()
    number, name = match.groups()
    if name is not None:
        names[number] = name
        return name
    return names.get(number, f"({number})")


def read(path: str | Path) -> ProcessCount:
    """Self instructions per object of one callgrind output file."""
    text = Path(path).read_text(errors="replace")
    if not text.startswith("# callgrind format"):
        raise CallgrindError(f"{Path(path).name}: not a callgrind file (empty or cut short)")
    names: dict[str, str] = {}
    functions: dict[str, str] = {}  # fn= and cfn= share one table of compressed names
    by_object: dict[str, int] = {}
    pid, command, totals, summary = 0, "", None, None
    current, callee, collector, skip_next = "???", "", 0, False
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith(_COST_START):
            if skip_next:
                skip_next = False
                if callee in COLLECTORS:
                    collector += int(line.split()[1])
                continue
            parts = line.split()
            if len(parts) >= 2:
                by_object[current] = by_object.get(current, 0) + int(parts[1])
            continue
        key, _, value = line.partition("=") if "=" in line.split(":", 1)[0] else line.partition(":")
        if key == "ob":
            current = _name(value, names)
        elif key == "cob":
            _name(value, names)  # defines a name a later ob= may refer to
        elif key == "fn":
            _name(value, functions)
        elif key == "cfn":
            callee = _name(value, functions)
        elif key == "calls":
            skip_next = True
        elif key == "pid":
            pid = int(value)
        elif key == "cmd":
            command = value.strip()
        elif key == "totals":
            totals = int(value)
        elif key == "summary":
            summary = int(value)
    counted = sum(by_object.values())
    if totals is None or summary is None or counted != totals:
        raise CallgrindError(f"{Path(path).name}: cut short (self costs {counted}, totals {totals})")
    scale = summary / counted if counted else 0.0
    by_object = {name: round(cost * scale) for name, cost in by_object.items()}
    named = not COLLECTOR_NAMED_BY.isdisjoint(functions.values())
    return ProcessCount(pid, command, summary, by_object, round(collector * scale), named)


def read_processes(paths) -> list[ProcessCount]:
    """Every process's count from its files (its parts, ``callgrind.PID`` and ``callgrind.PID.N``
    dumped at each fork, summed): one ``ProcessCount`` per process."""
    merged: dict[int, ProcessCount] = {}
    for path in sorted(paths, key=str):
        part = read(path)
        whole = merged.get(part.pid)
        if whole is None:
            merged[part.pid] = part
            continue
        whole.instructions += part.instructions
        for name, cost in part.by_object.items():
            whole.by_object[name] = whole.by_object.get(name, 0) + cost
        whole.collector += part.collector
        whole.collector_named = whole.collector_named or part.collector_named
        whole.command = whole.command or part.command
    return list(merged.values())
