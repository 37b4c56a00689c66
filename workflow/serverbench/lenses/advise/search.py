"""The settings search of the ``advise`` profile, as a policy: which settings of a server to
measure next, given what the settings measured so far gave. Pure: the cell stage calls it
with a function that measures one setting (``cell.advise``), the tests with planted figures.

A server's settings are its worker model (a catalogue entry: gunicorn's sync worker,
``gunicorn-gthread``), its workers and, where the model has them, its threads. The search is
adaptive, never a full grid:

1. start from the rule of thumb (``2*cpus+1`` workers, or the server's default);
2. workers: double while capacity at the objective clearly grows and memory fits the budget;
   halve while it does not clearly shrink (fewer workers that do as much use less memory);
3. threads, at the best workers: double while capacity clearly grows;
4. in turn: where threads moved the best, workers doubled again at its threads, then threads,
   until neither moves it;
5. refine: the midpoints between the best and its measured neighbours.

"Clearly" is the intervals' word: a capacity is an interval (the highest offered rate that met
the objective, the lowest that missed it), and one setting does more than another only where
its interval lies wholly above the other's widened by a margin (``advise.margin``, 10%: what
a repeat of one setting moved by, docs/advise.md). The same reading decides the
recommendation (``decide.advice``), so the search steers by the rule its answer is judged by.

No step rests on one reading where it would end a walk: a setting that did not clearly do
more (or, halving, clearly did less) is measured once more from a fresh start — a new
placement of connections on workers, which the kernel decides — and the walk goes on from the
better of its readings. The recommendation reads every setting by all its readings (``pool``:
what each start of it met, the lowest, up to the highest it missed at), so a setting is
recommended for what it did on each start, not on its luckiest. A walk that still rises when
the point budget (``max_points``) is spent goes on, up to ``extend_points`` settings more;
where it wants one more even then it says so (``stopped_at_budget``): capacity was still rising
there, and the answer is bound by the budget, not by the objective.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from serverbench.decide import margins
from serverbench.decide.margins import Question, Side
from serverbench.lenses.advise.settings import AdviseSettings
from serverbench.plan import scaling

DEFAULT_RESOLUTION = 0.05  # a capacity whose missed rate is unknown: its upper end this share above the met one
DEFAULT_MARGIN = 0.10  # the schema's default of advise.margin


@dataclass(frozen=True, order=True)
class Setting:
    """One way to run a server: its worker model (a catalogue entry), workers, threads per worker."""

    model: str
    workers: int
    threads: int = 1

    @property
    def concurrency(self) -> int:
        """Requests the setting can hold at once."""
        return self.workers * self.threads

    def label(self) -> str:
        return f"{self.model} {self.workers}×{self.threads}"


@dataclass(frozen=True)
class Axis:
    """The counts a setting may take on one axis (workers or threads), both ends included."""

    low: int
    high: int

    def clip(self, count: int) -> int:
        return max(self.low, min(self.high, count))


@dataclass(frozen=True)
class Space:
    """One worker model's settings: its axes (``None``: fixed at the start's count) and the
    rule of thumb it starts from."""

    start: Setting
    workers: Axis | None
    threads: Axis | None

    def setting(self, workers: int, threads: int) -> Setting:
        w = self.workers.clip(workers) if self.workers else self.start.workers
        t = self.threads.clip(threads) if self.threads else self.start.threads
        return Setting(self.start.model, w, t)


@dataclass(frozen=True)
class Capacity:
    """Capacity at the objective as an interval: ``met`` the highest offered rate (req/s) whose
    p99 met the objective (0: none did), ``missed`` the lowest that did not (None: none missed
    up to the highest offered)."""

    met: float
    missed: float | None

    def upper(self, resolution: float = DEFAULT_RESOLUTION) -> float:
        return self.missed if self.missed is not None else self.met * (1 + resolution)

    def ratio_to(self, other: Capacity) -> tuple[float, float]:
        """This capacity over ``other``'s as an interval: the lowest ratio the two intervals
        allow and the highest (infinite where ``other`` met the objective at no rate)."""
        low = self.met / other.upper() if other.upper() > 0 else (math.inf if self.met > 0 else 1.0)
        high = self.upper() / other.met if other.met > 0 else math.inf
        return low, high

    def clearly_above(self, other: Capacity, margin: float = DEFAULT_MARGIN) -> bool:
        """This capacity is told apart from ``other`` and higher: the ratio's interval above the
        band of ``margin`` (a share: what a repeat of the same setting may move by,
        docs/advise.md), by the one decision rule (``decide.margins.side``)."""
        return margins.side(*self.ratio_to(other), margin, Question.IN_ONE_RUN) is Side.ABOVE

    def told_apart(self, other: Capacity, margin: float = DEFAULT_MARGIN) -> bool:
        return self.clearly_above(other, margin) or other.clearly_above(self, margin)


@dataclass(frozen=True)
class Measured:
    """What one setting gave: its capacity at the objective, the server tree's memory under that
    load (PSS bytes), and whether it could be measured at all (``ok``)."""

    setting: Setting
    capacity: Capacity
    memory_bytes: int | None
    ok: bool = True

    def fits(self, budget_bytes: int | None) -> bool:
        return budget_bytes is None or (self.memory_bytes is not None and self.memory_bytes <= budget_bytes)

    def eligible(self, budget_bytes: int | None) -> bool:
        """Can be recommended: measured, met the objective at some rate, within the budget."""
        return self.ok and self.capacity.met > 0 and self.fits(budget_bytes)


def rule_of_thumb(formula, cpus: int) -> int:
    """The rule of thumb's count for ``cpus`` (a count or a formula such as ``2*cpus+1``)."""
    return scaling.evaluate(formula, {"cpus": cpus, "host_cpus": cpus})


def best(points: list[Measured], budget_bytes: int | None, margin: float = DEFAULT_MARGIN) -> Measured | None:
    """The eligible point of most capacity, and of those not told apart from it the one using
    the least memory (then the fewest workers × threads)."""
    eligible = [p for p in points if p.eligible(budget_bytes)]
    if not eligible:
        return None
    top = max(eligible, key=lambda p: p.capacity.met)
    tied = [p for p in eligible if not top.capacity.clearly_above(p.capacity, margin)]
    return min(tied, key=lambda p: (p.memory_bytes or 0, p.setting.concurrency, p.setting))


def pool(readings: list[Measured]) -> list[Measured]:
    """One ``Measured`` per setting from all its readings (each a fresh start), in the order the
    settings were first measured: its capacity what every reading met (the lowest met) up to the
    highest it missed at (none where a reading missed at none), its memory the most any used;
    measured where any reading was."""
    by_setting: dict[Setting, list[Measured]] = {}
    for reading in readings:
        by_setting.setdefault(reading.setting, []).append(reading)
    pooled = []
    for setting, found in by_setting.items():
        ok = [r for r in found if r.ok] or found
        if len(ok) == 1:
            pooled.append(ok[0])
            continue
        missed = [r.capacity.missed for r in ok]
        capacity = Capacity(min(r.capacity.met for r in ok), None if None in missed else max(missed))
        memories = [r.memory_bytes for r in ok if r.memory_bytes is not None]
        pooled.append(Measured(setting, capacity, max(memories) if memories else None, any(r.ok for r in ok)))
    return pooled


def runner_up(points: list[Measured], chosen: Measured, budget_bytes: int | None, margin: float) -> Measured | None:
    """The eligible setting of most capacity that ``chosen`` was told apart from (clearly above it):
    what the recommendation is measured again beside."""
    below = [p for p in points if p.eligible(budget_bytes) and chosen.capacity.clearly_above(p.capacity, margin)]
    return max(below, key=lambda p: p.capacity.met, default=None)


class Search:
    """One worker model's adaptive search (the module's docstring); ``measure`` measures a
    setting (a fresh start each call), at most ``max_points`` settings are measured, and a step
    that would end a walk once more."""

    def __init__(
        self,
        space: Space,
        measure: Callable[[Setting], Measured],
        budget_bytes: int | None,
        max_points: int,
        margin: float = DEFAULT_MARGIN,
        extend_points: int = 0,
    ):
        self.space, self.measure, self.budget, self.max_points = space, measure, budget_bytes, max_points
        self.margin, self.extend_points = margin, extend_points
        # What the walks steer by: each setting's best reading.
        self.points: dict[Setting, Measured] = {}
        self.readings: list[Measured] = []  # every reading, in order
        self.stopped_at_budget = False

    @classmethod
    def asked(cls, space: Space, measure: Callable[[Setting], Measured], settings: AdviseSettings) -> Search:
        """The walk a profile's ``advise`` asks for: its memory budget, points and margin."""
        return cls(
            space, measure, settings.memory_budget_bytes, settings.max_points, settings.margin, settings.extend_points
        )

    def run(self) -> list[Measured]:
        """Every reading of the search (``pool`` reads them a setting each)."""
        start = self.at(self.space.start)
        if start is not None and start.ok:
            self._walk_workers()
            self._walk_threads()
            self._walk_in_turn()
            self._refine()
        return list(self.readings)

    def at(self, setting: Setting, walking: bool = False) -> Measured | None:
        """The setting's reading, measured where it has none (None: the point budget is spent;
        ``walking``: a walk that still rises wants it, which ``extend_points`` more may serve,
        else capacity was still rising when the budget ran out)."""
        if setting in self.points:
            return self.points[setting]
        budget = self.max_points + (self.extend_points if walking else 0)
        if len(self.points) >= budget:
            self.stopped_at_budget = self.stopped_at_budget or walking
            return None
        self.points[setting] = self._read(setting)
        return self.points[setting]

    def _read(self, setting: Setting) -> Measured:
        found = self.measure(setting)
        self.readings.append(found)
        return found

    def confirmed(self, found: Measured) -> Measured:
        """A reading that would end a walk, measured once more from a fresh start: the better of
        its readings (the one a walk goes on from where it does)."""
        if sum(r.setting == found.setting for r in self.readings) > 1:
            return self.points[found.setting]
        again = self._read(found.setting)
        better = max((found, again), key=lambda r: (r.ok, r.capacity.met))
        self.points[found.setting] = better
        return better

    def _best(self) -> Measured:
        found = best(list(self.points.values()), self.budget, self.margin)
        return found or self.points[self.space.start]

    def _walk_workers(self, grow_only: bool = False) -> None:
        if self.space.workers is None:
            return
        for grow in (True,) if grow_only else (True, False):
            current = self._best()
            while True:
                w, t = current.setting.workers, current.setting.threads
                nxt = self.space.setting(w * 2 if grow else max(1, w // 2), t)
                if nxt == current.setting or nxt in self.points:
                    break
                found = self.at(nxt, walking=grow)
                if found is None or not found.ok:
                    break
                steps = self._grows if grow else self._shrinks
                if not steps(found, current):
                    if not found.fits(self.budget):  # the budget ends it, not a placement: no second reading
                        break
                    found = self.confirmed(found)
                    if not steps(found, current):
                        break
                current = found

    def _grows(self, found: Measured, current: Measured) -> bool:
        """More workers go on while they clearly do more within the budget."""
        return found.capacity.clearly_above(current.capacity, self.margin) and found.fits(self.budget)

    def _shrinks(self, found: Measured, current: Measured) -> bool:
        """Fewer workers go on while they do no clearly less, or while the last did not fit the budget."""
        if not current.fits(self.budget):
            return True
        return found.fits(self.budget) and not current.capacity.clearly_above(found.capacity, self.margin)

    def _walk_threads(self) -> None:
        if self.space.threads is None:
            return
        current = self._best()
        while True:
            nxt = self.space.setting(current.setting.workers, current.setting.threads * 2)
            if nxt == current.setting or nxt in self.points:
                break
            found = self.at(nxt, walking=True)
            if found is None or not found.ok or not found.fits(self.budget):
                break
            if not found.capacity.clearly_above(current.capacity, self.margin):
                found = self.confirmed(found)
                if not found.capacity.clearly_above(current.capacity, self.margin):
                    break
            current = found

    def _walk_in_turn(self) -> None:
        """Where threads moved the best, more workers at its thread count, then more threads at
        those, in turn until neither moves it. At one thread the workers' walk may have stopped on
        a placement (a gthread worker takes more connections than its thread serves, and which
        worker gets them is the kernel's choice) where, with threads, more workers clearly do
        more: one search stopped at 3 × 16 and the next reached 6 × 16 (docs/advise.md)."""
        if self.space.workers is None or self.space.threads is None:
            return
        while True:
            before = self._best().setting
            self._walk_workers(grow_only=True)
            self._walk_threads()
            if self._best().setting == before:
                return

    def _refine(self) -> None:
        """The midpoints on the workers axis between the best and the measured counts beside it,
        where the best may lie between: below, a count that did about as much (fewer workers
        may do as much for less memory); above, one over the budget or past the peak."""
        if self.space.workers is None:
            return
        chosen = self._best()
        setting = chosen.setting
        beside = {
            s.workers: p for s, p in self.points.items() if s.threads == setting.threads and s.model == setting.model
        }
        below = [w for w in sorted(beside) if w < setting.workers]
        above = [w for w in sorted(beside) if w > setting.workers]
        wanted = []
        if below and not chosen.capacity.clearly_above(beside[below[-1]].capacity, self.margin):
            wanted.append(below[-1])
        if above and (
            not beside[above[0]].fits(self.budget)
            or chosen.capacity.clearly_above(beside[above[0]].capacity, self.margin)
        ):
            wanted.append(above[0])
        for neighbour in wanted:
            middle = (neighbour + setting.workers) // 2
            if middle not in (neighbour, setting.workers):
                self.at(self.space.setting(middle, setting.threads))
