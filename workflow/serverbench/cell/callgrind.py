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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_NAMED = re.compile(r"^\((\d+)\)(?:\s(.*))?$")
_COST_START = tuple("0123456789+-*")


class CallgrindError(ValueError):
    """A callgrind file that cannot be counted (empty, cut short, unknown format)."""


@dataclass
class ProcessCount:
    """One process's user-space instructions, as callgrind counted them."""

    pid: int
    command: str
    instructions: int
    by_object: dict[str, int] = field(default_factory=dict)


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
    by_object: dict[str, int] = {}
    pid, command, totals, summary = 0, "", None, None
    current, skip_next = "???", False
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith(_COST_START):
            if skip_next:
                skip_next = False
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
    return ProcessCount(pid, command, summary, {name: round(cost * scale) for name, cost in by_object.items()})
