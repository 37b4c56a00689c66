"""The recommendation: per server the setting of most capacity at the objective within the
budget (of those its intervals do not tell apart, beyond the record's margin, the one using the
least memory: the same reading the search steered by, ``search.best``, each setting read by
all its readings, ``search.pool``), then the servers ranked.

Beside each: what the rule of thumb's setting gave at the same objective (its capacity, p99
and memory: under a CPU limit the rule counts the host's CPUs, so that is what the host-CPU
rule would have cost), each one's throttling under the limit, what held the
recommended setting (the objective, the memory budget where a setting over it did clearly
more, or the point budget where the search wanted more settings than it could measure),
whether it reproduced from its deployed file (its capacity then inside the search's interval
widened by the margin, ``decide.margins.side``), and the reload under load at it. A server is recommended only
where some setting met the objective within the budget and its reloads failed no request;
otherwise it is listed with the reason. Ranked servers next to each other are "equivalent"
where their capacities' intervals overlap.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from serverbench.decide import margins
from serverbench.decide.margins import Question, Side
from serverbench.lenses.advise.record import AdviceRecord, Bound, Point, ReloadOutcome, Reproduced, Role, Verdict
from serverbench.lenses.advise.search import Capacity, Measured, Setting, best, pool, runner_up
from serverbench.record.units import megabytes
from serverbench.record.vocabulary import Outcome, Status

RELOAD_OK = (ReloadOutcome.CLEAN, ReloadOutcome.NOT_DECLARED)
COLUMNS = [
    "profile",
    "server",
    "language",
    "rank",
    "verdict",
    "reason",
    "model",
    "workers",
    "threads",
    "capacity_rps",
    "capacity_missed_rps",
    "memory_mb",
    "bound_by",
    "equivalent_settings",
    "rule_model",
    "rule_workers",
    "rule_threads",
    "rule_capacity_rps",
    "rule_memory_mb",
    "gain",
    "reload",
    "reload_failed",
    "vs_next",
    "objective_p99_ms",
    "memory_budget_mb",
    "margin",
    "cpus",
    "points",
    "readings",
    "reproduced",
    "reproduced_rps",
    "reproduced_ratio",
    "runner_up",
    "runner_up_capacity_rps",
    "runner_up_reproduced_rps",
    "cpu_limit",
    "p99_ms",
    "throttled_periods",
    "throttled_s",
    "rule_p99_ms",
    "rule_throttled_periods",
    "rule_throttled_s",
    "rule_capacity_lost_rps",
    "rule_memory_extra_mb",
]


def measured(point: Point) -> Measured:
    setting = Setting(point.model, point.workers, point.threads)
    return Measured(setting, Capacity(point.met_rps, point.missed_rps), point.memory_bytes, point.status is Status.OK)


def searched(record: AdviceRecord) -> list[Measured]:
    """Every setting the search measured, read by all its readings (``search.pool``)."""
    return pool([measured(p) for p in record.points if p.role is not Role.REPRODUCE])


def _reproduction(record: AdviceRecord, found: Measured | None) -> Measured | None:
    """The setting's reading from its deployed file, where the job made one."""
    if found is None:
        return None
    again = [measured(p) for p in record.points if p.role is Role.REPRODUCE]
    return next((reading for reading in again if reading.setting == found.setting), None)


def reproduced(chosen: Measured, again: Measured | None, margin: float) -> Reproduced:
    """The deployed file's capacity against the search's interval widened by the margin."""
    if again is None or not again.ok:
        return Reproduced.NOT_MEASURED
    new = again.capacity.met
    low, high = chosen.capacity.met, chosen.capacity.upper()
    ratios = (new / high if high > 0 else math.inf, new / low if low > 0 else math.inf)
    side = margins.side(*ratios, margin, Question.IN_ONE_RUN)
    return {Side.ABOVE: Reproduced.HIGHER, Side.BELOW: Reproduced.LOWER}.get(side, Reproduced.YES)


def _rule(record: AdviceRecord) -> Point | None:
    """The rule of thumb's setting of the server's own worker model, where it could be measured."""
    found = [p for p in record.points if p.rule_of_thumb and p.model == record.server and p.status is Status.OK]
    return found[0] if found else None


def _why_not(record: AdviceRecord, chosen: Measured | None, points: list[Measured]) -> tuple[Verdict, str | None]:
    if record.status is Status.SKIPPED:
        return Verdict.NOT_MEASURED, record.reason
    if record.status is Status.FAILED:
        return Verdict.NOT_RECOMMENDED, f"no setting could be measured: {record.reason}"
    objective = f"p99 ≤ {record.objective_p99_ms:g} ms"
    if chosen is None:
        if not any(p.capacity.met > 0 for p in points if p.ok):
            return Verdict.NOT_RECOMMENDED, f"no setting met {objective} at any rate offered"
        return Verdict.NOT_RECOMMENDED, f"every setting that met {objective} was over the memory budget"
    reload = record.reload
    if reload is not None and reload.outcome not in RELOAD_OK:
        said = (
            f"{reload.failed} request{'s' * (reload.failed != 1)} failed over {reload.reloads} "
            f"reload{'s' * (reload.reloads != 1)} under load"
        )
        if reload.outcome is ReloadOutcome.BROKEN:
            said = f"the server broke on reload under load ({reload.reason})"
        return Verdict.NOT_RECOMMENDED, said
    return Verdict.RECOMMENDED, None


def server_row(record: AdviceRecord) -> dict:
    """One server's recommendation (the module's docstring), as a row of advice_recommendations.csv."""
    points = searched(record)
    chosen = best(points, record.memory_budget_bytes, record.margin)
    verdict, reason = _why_not(record, chosen, points)
    rule = _rule(record)
    row = {
        "profile": record.profile,
        "server": record.server,
        "language": record.language,
        "verdict": verdict,
        "reason": reason,
        "objective_p99_ms": record.objective_p99_ms,
        "memory_budget_mb": megabytes(record.memory_budget_bytes),
        "margin": record.margin,
        "cpus": record.cpus,
        "points": len(points),
        "readings": sum(p.role is not Role.REPRODUCE for p in record.points),
        "rule_model": rule.model if rule else None,
        "rule_workers": rule.workers if rule else None,
        "rule_threads": rule.threads if rule else None,
        "rule_capacity_rps": rule.met_rps if rule else None,
        "rule_memory_mb": megabytes(rule.memory_bytes) if rule else None,
        "rule_p99_ms": rule.p99_ms if rule else None,
        "rule_throttled_periods": rule.throttled_periods if rule else None,
        "rule_throttled_s": rule.throttled_s if rule else None,
        "cpu_limit": record.cpu_limit,
        "reload": record.reload.outcome if record.reload else None,
        "reload_failed": record.reload.failed if record.reload else None,
    }
    if chosen is not None:
        row.update(_chosen(chosen, points, record, rule))
    return row


def _chosen(chosen: Measured, points: list[Measured], record: AdviceRecord, rule: Point | None) -> dict:
    budget = record.memory_budget_bytes
    margin = record.margin
    tied = [p for p in points if p.eligible(budget) and not p.capacity.told_apart(chosen.capacity, margin)]
    over = [p for p in points if p.ok and not p.fits(budget) and p.capacity.clearly_above(chosen.capacity, margin)]
    setting = chosen.setting
    bound = Bound.BUDGET if over else Bound.POINTS if setting.model in record.stopped_at_budget else Bound.OBJECTIVE
    return {
        "model": setting.model,
        "workers": setting.workers,
        "threads": setting.threads,
        "capacity_rps": chosen.capacity.met,
        "capacity_missed_rps": chosen.capacity.missed,
        "memory_mb": megabytes(chosen.memory_bytes),
        "bound_by": bound,
        "equivalent_settings": json.dumps(sorted(p.setting.label() for p in tied if p.setting != setting)),
        "gain": round(chosen.capacity.met / rule.met_rps, 3) if rule and rule.met_rps else None,
        **_reproduced_columns(record, chosen, points),
        **_rule_cost(record, chosen, rule),
    }


def _rule_cost(record: AdviceRecord, chosen: Measured, rule: Point | None) -> dict:
    """The chosen setting's own reading (its p99, its throttling), and what the rule of thumb's
    would have cost beside it: the capacity it lacks, the memory it uses over the chosen one's."""
    own = _reading_at_capacity(record, chosen.setting)
    memory = megabytes(chosen.memory_bytes)
    rule_memory = megabytes(rule.memory_bytes) if rule else None
    return {
        "p99_ms": own.p99_ms if own else None,
        "throttled_periods": own.throttled_periods if own else None,
        "throttled_s": own.throttled_s if own else None,
        "rule_capacity_lost_rps": round(chosen.capacity.met - rule.met_rps, 1) if rule else None,
        "rule_memory_extra_mb": (
            round(rule_memory - memory, 1) if rule_memory is not None and memory is not None else None
        ),
    }


def _reading_at_capacity(record: AdviceRecord, setting: Setting) -> Point | None:
    """The search's reading of a setting at its capacity (the one ``pool`` takes its met rate from)."""
    readings = [
        p
        for p in record.points
        if p.role is not Role.REPRODUCE and p.status is Status.OK and measured(p).setting == setting
    ]
    return min(readings, key=lambda p: p.met_rps, default=None)


def _reproduced_columns(record: AdviceRecord, chosen: Measured, points: list[Measured]) -> dict:
    again = _reproduction(record, chosen)
    second = runner_up(points, chosen, record.memory_budget_bytes, record.margin)
    second_again = _reproduction(record, second)
    new = again.capacity.met if again is not None and again.ok else None
    return {
        "reproduced": reproduced(chosen, again, record.margin),
        "reproduced_rps": new,
        "reproduced_ratio": round(new / chosen.capacity.met, 3) if new is not None and chosen.capacity.met else None,
        "runner_up": second.setting.label() if second else None,
        "runner_up_capacity_rps": second.capacity.met if second else None,
        "runner_up_reproduced_rps": second_again.capacity.met if second_again and second_again.ok else None,
    }


def _rank(rows: list[dict]) -> list[dict]:
    """Recommended servers by capacity, each said ``equivalent`` to the next where the intervals
    overlap (else ``higher``); the others after them, unranked."""
    chosen = sorted((r for r in rows if r["verdict"] is Verdict.RECOMMENDED), key=lambda r: -r["capacity_rps"])
    for rank, (row, after) in enumerate(zip(chosen, [*chosen[1:], None], strict=False), start=1):
        row["rank"] = rank
        if after is not None:
            mine = Capacity(row["capacity_rps"], row["capacity_missed_rps"])
            theirs = Capacity(after["capacity_rps"], after["capacity_missed_rps"])
            row["vs_next"] = Outcome.HIGHER if mine.clearly_above(theirs, row["margin"]) else Outcome.EQUIVALENT
    others = [r for r in rows if r["verdict"] is not Verdict.RECOMMENDED]
    return chosen + sorted(others, key=lambda r: r["server"])


def recommendations(records: list[AdviceRecord]) -> pd.DataFrame:
    """advice_recommendations.csv: a row per (profile, server), ranked within each profile."""
    rows = []
    for profile in sorted({r.profile for r in records}):
        rows.extend(_rank([server_row(r) for r in records if r.profile == profile]))
    return pd.DataFrame(rows, columns=COLUMNS)
