"""advice.csv: every setting the advise profile searched, one row per (profile, server, setting).

A row is a point: the server and worker model, workers and threads, its capacity at the
objective as an interval (``capacity_rps`` the highest offered rate whose p99 met the
objective, ``capacity_missed_rps`` the lowest that did not; empty: none missed), what held
it (``limit``), the server tree's PSS under that load, whether it fits the budget, whether it
is the rule of thumb's setting, why it was measured (``role``: the search's reading, once more
where it would have ended a walk, or again from its deployed file) and the open-loop runs it
rests on (``steps``, JSON); under a CPU limit (``cpu_limit``) the quota its cgroup held, read
back (``cpu_quota``), and over the rates offered the CFS periods it ran in and was throttled in
and the time it waited (``periods``, ``throttled_periods``, ``throttled_s``), and p99 at its
capacity (``p99_ms``). A setting that could not be measured is a row with its status and reason.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import pandas as pd

from serverbench import files
from serverbench.lenses.advise.record import AdviceRecord, load_advice
from serverbench.record.units import megabytes

COLUMNS = [
    "profile",
    "server",
    "language",
    "app",
    "workload",
    "model",
    "workers",
    "threads",
    "status",
    "reason",
    "capacity_rps",
    "capacity_missed_rps",
    "limit",
    "memory_mb",
    "within_budget",
    "rule_of_thumb",
    "peak_rps",
    "connections",
    "objective_p99_ms",
    "memory_budget_mb",
    "cpus",
    "seconds",
    "role",
    "steps",
    "p99_ms",
    "cpu_limit",
    "cpu_quota",
    "periods",
    "throttled_periods",
    "throttled_s",
]


def point_rows(record: AdviceRecord) -> list[dict]:
    budget = megabytes(record.memory_budget_bytes)
    rows = []
    for point in record.points:
        memory = megabytes(point.memory_bytes)
        rows.append(
            {
                "profile": record.profile,
                "server": record.server,
                "language": record.language,
                "app": record.app,
                "workload": record.workload,
                "model": point.model,
                "workers": point.workers,
                "threads": point.threads,
                "status": point.status,
                "reason": point.reason,
                "capacity_rps": point.met_rps,
                "capacity_missed_rps": point.missed_rps,
                "limit": point.limit,
                "memory_mb": memory,
                "within_budget": budget is None or (memory is not None and memory <= budget),
                "rule_of_thumb": point.rule_of_thumb,
                "peak_rps": point.peak_rps,
                "connections": point.connections,
                "objective_p99_ms": record.objective_p99_ms,
                "memory_budget_mb": budget,
                "cpus": record.cpus,
                "seconds": point.seconds,
                "role": point.role,
                "steps": json.dumps([asdict(step) for step in point.steps]),
                "p99_ms": point.p99_ms,
                "cpu_limit": record.cpu_limit,
                "cpu_quota": point.cpu_quota,
                "periods": point.periods,
                "throttled_periods": point.throttled_periods,
                "throttled_s": point.throttled_s,
            }
        )
    return rows


def read_records(paths) -> list[AdviceRecord]:
    return [load_advice(files.read_json(path)) for path in sorted(map(str, paths))]


def advice_table(records: list[AdviceRecord]) -> pd.DataFrame:
    rows = [row for record in records for row in point_rows(record)]
    return pd.DataFrame(rows, columns=COLUMNS)
