"""The work lens's arithmetic: what a life left (``Life``), and the figures per request of a
pair of lives: the marginal between a short and a long life (start-up and shutdown cancel),
instructions by object and class, syscalls and CPU times; which of several valgrind pairs is
the figure."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from serverbench.lenses.work import perfcount
from serverbench.lenses.work.callgrind import ProcessCount
from serverbench.lenses.work.perfcount import ThreadSyscalls
from serverbench.lenses.work.record import Instructions, ProcessWork, Syscalls


@dataclass
class Life:
    """What one life of the server left: per-process counts and its length."""

    requests: int
    seconds: float
    processes: list[ProcessCount] = dataclasses.field(default_factory=list)  # valgrind's, one per process
    threads: list[ThreadSyscalls] = dataclasses.field(default_factory=list)  # perf trace's
    counters: dict[str, float] = dataclasses.field(default_factory=dict)  # perf stat's, CPU user/system seconds
    seen: set[int] = dataclasses.field(default_factory=set)  # pids of the server's processes seen alive


def object_class(path: str, classes: list[dict]) -> str:
    """The class of an object (its path) by config's ``work.objects``: the first that matches."""
    for entry in classes:
        if any(re.search(pattern, path) for pattern in entry["patterns"]):
            return entry["class"]
    return "other"


def _per_request(many: float, few: float, span: int) -> float:
    return (many - few) / span


def instructions(config: dict, few: Life, many: Life) -> Instructions:
    """The marginal instructions per request outside the cyclic collector, the collector's
    apart; by object, class and kind of process (these with the collector's: where it ran)."""
    span = many.requests - few.requests
    classes = config["work_lens"]["objects"]

    def summed(life: Life, key) -> dict[str, int]:
        totals: dict[str, int] = {}
        for process in life.processes:
            for name, count in key(process):
                totals[name] = totals.get(name, 0) + count
        return totals

    objects = [summed(life, lambda p: p.by_object.items()) for life in (few, many)]
    commands = [summed(life, lambda p: [(p.command, p.instructions)]) for life in (few, many)]
    counts = [summed(life, lambda p: [(p.command, 1)]) for life in (few, many)]
    by_object = {
        name: round(_per_request(objects[1].get(name, 0), objects[0].get(name, 0), span), 2)
        for name in sorted(set(objects[0]) | set(objects[1]))
    }
    by_class: dict[str, float] = {}
    for name, value in by_object.items():
        kind = object_class(name, classes)
        by_class[kind] = round(by_class.get(kind, 0.0) + value, 2)
    by_command = [
        ProcessWork(
            command,
            counts[1].get(command, 0),
            round(_per_request(commands[1].get(command, 0), commands[0].get(command, 0), span), 2),
        )
        for command in sorted(set(commands[0]) | set(commands[1]))
    ]
    totals = [sum(p.instructions for p in life.processes) for life in (few, many)]
    collector = [sum(p.collector for p in life.processes) for life in (few, many)]
    outside = [total - spent for total, spent in zip(totals, collector, strict=True)]
    return Instructions(
        per_request=round(_per_request(outside[1], outside[0], span), 2),
        by_object=dict(sorted(by_object.items(), key=lambda item: -abs(item[1]))),
        by_class=dict(sorted(by_class.items(), key=lambda item: -item[1])),
        by_command=by_command,
        lives={str(life.requests): total for life, total in zip((few, many), totals, strict=True)},
        seconds={str(life.requests): life.seconds for life in (few, many)},
        collector_per_request=round(_per_request(collector[1], collector[0], span), 2),
        collector_lives={str(life.requests): spent for life, spent in zip((few, many), collector, strict=True)},
        collector_named=any(p.collector_named for life in (few, many) for p in life.processes),
    )


def collector_imbalance(counted: Instructions) -> float:
    """How much more one life's cyclic collector did than the other's, per request (the
    collector's marginal), as a share of the figure: a whole-heap collection falls in one life
    by the clock, and what it freed moves the work after it too (docs/work.md)."""
    return abs(counted.collector_per_request) / counted.per_request if counted.per_request > 0 else 0.0


def settled(counted: list[Instructions], tolerance: float) -> bool:
    """The last pair's collectors are balanced, or match an earlier pair's: a server whose
    collector runs on every few requests (uWSGI on the project's CPython, a connection per
    request: the same share in every pair) does that work per request."""
    last = collector_imbalance(counted[-1])
    return last <= tolerance or any(abs(collector_imbalance(c) - last) <= tolerance for c in counted[:-1])


def figure_pair(counted: list[Instructions], tolerance: float, wanted: int) -> Instructions:
    """The pair whose figure is kept: the most balanced one, or, where ``wanted`` pairs were
    asked for (``work_pairs``), the median of the balanced ones (of all, if none is)."""
    if wanted == 1:
        return min(counted, key=collector_imbalance)
    balanced = [c for c in counted if collector_imbalance(c) <= tolerance] or counted
    ordered = sorted(balanced, key=lambda c: c.per_request)
    return ordered[(len(ordered) - 1) // 2]


def syscalls(counted: tuple[Life, Life], named: tuple[Life, Life]) -> Syscalls:
    """The marginal syscalls per request (perf stat's exact total; by name from perf
    trace's lives), context switches and CPU time."""
    few, many = counted
    span = many.requests - few.requests

    def marginal(key: str, scale: float = 1.0) -> float:
        return round(_per_request(many.counters[key], few.counters[key], span) * scale, 4)

    names = [perfcount.totals(life.threads) for life in named]
    name_span = named[1].requests - named[0].requests
    by_name = {
        name: round(_per_request(names[1].get(name, 0), names[0].get(name, 0), name_span), 4)
        for name in set(names[0]) | set(names[1])
    }
    return Syscalls(
        per_request=marginal("syscalls"),
        by_name=dict(sorted(((k, v) for k, v in by_name.items() if abs(v) >= 0.0005), key=lambda item: -item[1])),
        context_switches_per_request=marginal("context_switches"),
        cpu_us_per_request=marginal("cpu_ms", 1e3),
        cpu_user_us_per_request=marginal("cpu_user_s", 1e6),
        cpu_system_us_per_request=marginal("cpu_system_s", 1e6),
        lives={str(life.requests): {**life.counters, "seconds": life.seconds} for life in counted},
    )
