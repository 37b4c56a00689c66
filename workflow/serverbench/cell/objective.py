"""Capacity at a p99 objective, measured on a running server: the highest offered open-loop
rate whose p99 stays within the objective, as an interval (the highest rate that met it, the
lowest that missed it).

The client (the search's ``tool``, by default ``oha-fresh``: constant rate, latency counted
from when each request was due, each request on a connection of its own, as many clients or
a front opening one per request send it) may hold twice the requests the setting holds at
once and a few more: the listen queue keeps every worker busy, and no connection waits
behind another's keep-alive on a server that gives a worker to a connection (Starman). A rate
*met* the objective when every request sent got a correct answer, at least
``SENT_SHARE`` of the requests due were sent (a client that could not send on schedule hides
the wait of those it never sent), and p99 is within the objective.

The rates: first the closed loop's own rate at the same connections (``peak_s``; a lens that asks
with ``shed_answers=False`` counts only its answers below 500 in it: a server that sheds answers
503s faster than it serves, so the rates would start far past its capacity), then a
quarter more while every rate met the objective, or halving down until one meets it, then
bisecting between met and missed until they are ``resolution`` apart or ``rate_steps`` runs
are spent. The highest rate that met it is offered once more and must meet it again; if not,
the next lower rate that met it is the capacity (or, where none was offered, 85% of it,
twice at most). Each run's raw output goes to the raw file; the server tree's PSS is read
late in each run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from serverbench.cell import loadgen, parsers
from serverbench.cell.launch import Launch
from serverbench.cell.rawlog import RawLog
from serverbench.cell.underload import tree_pss
from serverbench.plan.objective import ObjectiveSearch
from serverbench.plan.shapes import Profile
from serverbench.record.capacity import Limit, Step

SENT_SHARE = 0.95  # of the requests due: fewer sent, and the client hid the wait
MEMORY_AT = 0.75  # of a run: when the server tree's PSS is read
BACK_OFF, BACK_OFF_STEPS = 0.85, 2  # a capacity not confirmed, nothing lower offered: offer 85% of it, twice at most
GROWTH_WHEN_ALL_MET = 1.25  # every rate offered met the objective: the next offers this much more


@dataclass
class Found:
    """What the search at one setting found."""

    peak_rps: float | None = None
    met: float = 0.0
    missed: float | None = None
    steps: list[Step] = field(default_factory=list)

    @property
    def limit(self) -> Limit:
        if self.met == 0:
            return Limit.NEVER_MET
        return Limit.OBJECTIVE if self.missed is not None else Limit.OFFERED

    def memory_at_met(self) -> int | None:
        """The server tree's PSS (bytes) at the highest rate that met the objective."""
        at = [s for s in self.steps if s.met and s.offered_rps == self.met]
        return at[-1].pss_bytes if at else None


class ObjectiveProbe:
    """Runs the rates against ``launch`` for a setting of ``connections`` (the module's docstring),
    as ``search`` says (the objective search's settings of the lens that asks)."""

    def __init__(
        self,
        config: dict,
        profile: Profile,
        launch: Launch,
        path: str,
        raw: RawLog,
        label: str,
        search: ObjectiveSearch,
        shed_answers: bool = True,
    ):
        self.config, self.profile, self.launch, self.raw, self.label = config, profile, launch, raw, label
        self.search = search
        self.shed_answers = shed_answers  # a 5xx counted in the closed loop's rate (the module's docstring)
        self.url = f"http://{launch.host}:{launch.port}{path}"
        self.objective_ms = float(search.objective_p99_ms)

    def capacity(self, connections: int) -> Found:
        found = Found()
        found.peak_rps = self._peak(connections)
        rate = found.peak_rps
        for _ in range(self.search.rate_steps + 1):
            if rate is None or rate < 1:
                break
            rate = round(rate, 1)
            step = self._step(rate, connections)
            found.steps.append(step)
            if step.met:
                found.met = max(found.met, rate)
            else:
                found.missed = rate if found.missed is None else min(found.missed, rate)
            rate = self._next_rate(found)
        if found.met > 0:
            self._confirm(found, connections)
        return found

    def _confirm(self, found: Found, connections: int) -> None:
        """The highest rate that met the objective, offered once more: where it misses this time,
        it bounds the capacity from above and the next lower rate that met it is the capacity (one
        lucky run near the knee does not make a capacity)."""
        step = self._step(found.met, connections)
        found.steps.append(step)
        if step.met:
            return
        found.missed = found.met
        lower = [s.offered_rps for s in found.steps if s.met and s.offered_rps < found.met]
        found.met = max(lower, default=0.0)
        rate = found.missed
        for _ in range(BACK_OFF_STEPS if not lower else 0):  # nothing lower was offered: offer less
            rate = round(rate * BACK_OFF, 1)
            step = self._step(rate, connections)
            found.steps.append(step)
            if step.met:
                found.met = rate
                return

    def _next_rate(self, found: Found) -> float | None:
        if found.missed is None:  # everything offered met it: offer more, until one misses
            return found.met * GROWTH_WHEN_ALL_MET
        if found.met == 0:
            return found.missed / 2
        if found.missed / found.met - 1 <= self.search.resolution:
            return None
        return (found.met + found.missed) / 2

    def _tool(self, name: str, connections: int, duration: float, rate: float | None = None) -> list[str]:
        values = loadgen.tool_values(self.profile, connections, self.url, duration)
        if rate is not None:
            values["rate"] = f"{rate:g}"
        return loadgen.build_argv(self.config["load_tools"][name], values)

    def _run(self, argv: list[str], duration: float, header: str, sample_memory: bool):
        sampled: dict = {}
        timer = threading.Timer(duration * MEMORY_AT, lambda: sampled.update(pss=tree_pss(self.launch)))
        if sample_memory:
            timer.start()
        try:
            deadline = duration + self.profile.timeout + 30
            run = loadgen.run(argv, self.profile.client_cpus, deadline, cpu_quota=self.profile.client_cpu_quota)
        finally:
            timer.cancel()
        line = self.raw.add(header, run.output)
        try:
            parsed = parsers.parse("oha", run.output)
        except parsers.ParseError:
            parsed = None
        return parsed, sampled.get("pss"), line

    def _peak(self, connections: int) -> float | None:
        duration = self.search.peak_s
        argv = self._tool(self.search.peak_tool, connections, duration)
        parsed, _, _ = self._run(argv, duration, f"{self.label} closed loop, {connections} connections", False)
        if parsed is None or not parsed["requests_per_s"]:
            self.launch.check_alive("the closed loop")
            return None
        rate = parsed["requests_per_s"] if self.shed_answers else answered_rate(parsed)
        return round(rate, 1) if rate else None

    def _duration(self, rate: float) -> float:
        wanted = self.search.tail_samples / rate
        return round(min(self.search.max_step_s, max(self.search.step_s, wanted)), 2)

    def _step(self, rate: float, connections: int) -> Step:
        duration = self._duration(rate)
        argv = self._tool(self.search.tool, connections, duration, rate)
        header = f"{self.label} offered {rate:g} req/s for {duration:g} s, {connections} connections"
        parsed, pss, line = self._run(argv, duration, header, True)
        if parsed is None:
            self.launch.check_alive("an offered rate")
            return Step(rate, duration, None, None, 0, None, False, pss, line)
        cut_off = sum((parsed["errors_detail"].get("cut_off_at_deadline") or {}).values())
        sent = (parsed["requests"] or 0) + cut_off
        p99 = parsed["latency_ms"]["p99"]
        failed = parsed["errors_total"] or 0
        met = failed == 0 and sent >= SENT_SHARE * rate * duration and p99 is not None and p99 <= self.objective_ms
        achieved = parsed["requests_per_s"]
        return Step(
            rate,
            duration,
            None if achieved is None else round(achieved, 1),
            parsed["requests"],
            failed,
            None if p99 is None else round(p99, 3),
            met,
            pss,
            line,
        )


def answered_rate(parsed: dict) -> float:
    """A closed loop's answers below 500 per second (its rate less the 5xx it was answered)."""
    statuses = parsed["errors_detail"].get("status_codes") or {}
    answered = sum(statuses.values())
    served = sum(count for code, count in statuses.items() if int(code) < 500)
    return parsed["requests_per_s"] * served / answered if answered else 0.0


def connections_for(workers: int, threads: int, most: int) -> int:
    """The client's connections for a setting: twice what it holds at once and a few more (the
    listen queue keeps every worker busy), at most ``most``."""
    return max(1, min(most, 2 * workers * threads + 4))
