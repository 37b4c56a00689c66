"""The recycle lens's tables from its records:

- recycle.csv, a row per (profile, server, setting, client): what the load showed at that
  setting (restarts, failures around them, p99 near them and between, the leak's slope, the
  largest process's memory in each half of the load);
- recycle_capacity.csv, a row per (profile, server, setting, life): the capacity at the p99
  objective (the highest offered rate that met it, the lowest that missed it), the workers seen
  to leave meanwhile, the tree's PSS at that rate, and against the server's own in the same life;
- recycle_checks.csv, a row per (profile, server, check) with value and unit, the figures it
  offers to releases and bisect (``CHECKS`` in the lens's ``__init__``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from serverbench import files
from serverbench.lenses.recycle.record import RecycleResult, Run, load_recycle
from serverbench.record.vocabulary import Status

MB = 1e6
COLUMNS = [
    "profile",
    "server",
    "language",
    "workload",
    "setting",
    "max_requests",
    "jitter",
    "client",
    "upstream",
    "status",
    "reason",
    "declared",
    "limit",
    "counts",
    "argv",
    "load_s",
    "answered",
    "answers_per_s",
    "failed",
    "failed_by_kind",
    "dropped_reused",
    "restarts",
    "restarts_per_10k",
    "failed_near_restarts",
    "failed_per_restart",
    "most_restarts_at_once",
    "most_away",
    "longest_gap_s",
    "p99_near_ms",
    "p99_between_ms",
    "failed_between",
    "leaks_bytes",
    "leak_bytes_per_request",
    "leak_against_planted",
    "leak_r2",
    "peak_first_half_mb",
    "peak_second_half_mb",
    "peak_growth_share",
    "bounded",
    "ceiling_mb",
]
CAPACITY_COLUMNS = [
    "profile",
    "server",
    "language",
    "setting",
    "max_requests",
    "jitter",
    "life",
    "status",
    "reason",
    "declared",
    "limit",
    "counts",
    "argv",
    "objective_p99_ms",
    "connections",
    "peak_rps",
    "capacity_rps",
    "missed_rps",
    "held_by",
    "against_own",
    "workers_left",
    "memory_mb",
    "raw",
]
CHECK_COLUMNS = ["profile", "server", "language", "check", "value", "unit", "ci_low", "ci_high", "status", "reason"]


def _mb(value) -> float | None:
    return None if value is None else round(value / MB, 2)


def read_records(paths: Iterable[Path | str]) -> list[RecycleResult]:
    """The records at ``paths``, typed (``record.load_recycle``), in the paths' sorted order."""
    return [load_recycle(files.read_json(path)) for path in sorted(map(str, paths))]


def run_row(result: RecycleResult, run: Run) -> dict:
    """One run of a record as a row of recycle.csv, with ``own``: whether it ran at the server's
    own recycling (not a column of the table: what check_rows tells the own runs by)."""
    restarts = run.restarts
    answered = run.answered
    # Every request that got no correct answer, a kept-alive connection's drop among them: a
    # worker that leaves may close one just as a request arrives on it (a client may retry those).
    failed = None
    if answered is not None:
        failed = sum(run.failed_by_kind.values()) + (run.dropped_reused or 0)
    # Each failure once, though restarts together share their windows: every failure not away from them.
    near = failed - (run.failed_between or 0) if failed is not None else 0
    leak, planted = run.leak_bytes_per_request, result.leaks_bytes
    return {
        "profile": result.profile,
        "server": result.server,
        "language": result.language,
        "workload": result.workload,
        "setting": run.setting.label,
        "own": run.setting.is_own,
        "max_requests": run.setting.max_requests,
        "jitter": run.setting.jitter,
        "client": run.client,
        "upstream": run.upstream,
        "status": run.status,
        "reason": run.reason,
        "declared": run.declared,
        "limit": run.limit,
        "counts": run.counts,
        "argv": " ".join(run.argv),
        "load_s": run.load_s,
        "answered": answered,
        "answers_per_s": round(answered / run.load_s, 1) if answered is not None and run.load_s else None,
        "failed": failed,
        "failed_by_kind": json.dumps(run.failed_by_kind, sort_keys=True),
        "dropped_reused": run.dropped_reused,
        "restarts": len(restarts) if answered is not None else None,
        "restarts_per_10k": round(len(restarts) * 1e4 / answered, 2) if answered else None,
        "failed_near_restarts": near if restarts else None,
        "failed_per_restart": round(near / len(restarts), 3) if restarts else None,
        "most_restarts_at_once": max((r.restarts_in_window for r in restarts), default=None),
        "most_away": run.most_away,
        "longest_gap_s": run.longest_gap_s,
        "p99_near_ms": run.p99_near_ms,
        "p99_between_ms": run.p99_between_ms,
        "failed_between": run.failed_between,
        "leaks_bytes": planted,
        "leak_bytes_per_request": leak,
        "leak_against_planted": round(leak / planted, 4) if leak is not None and planted else None,
        "leak_r2": run.leak_r2,
        "peak_first_half_mb": _mb(run.peak_first_half_bytes),
        "peak_second_half_mb": _mb(run.peak_second_half_bytes),
        "peak_growth_share": run.peak_growth_share,
        "bounded": run.bounded,
        "ceiling_mb": _mb(run.ceiling_bytes),
    }


def run_rows(results: Iterable[RecycleResult]) -> pd.DataFrame:
    """Every run's row (``run_row``, ``own`` with them); a server that could not be started: one
    row saying why."""
    rows = []
    for result in results:
        if not result.runs:
            rows.append({key: getattr(result, key) for key in ("profile", "server", "language", "workload")})
            rows[-1].update(status=result.status, reason=result.reason)
        rows.extend(run_row(result, run) for run in result.runs)
    return pd.DataFrame(rows, columns=[*COLUMNS, "own"])


def recycle_table(results: Iterable[RecycleResult]) -> pd.DataFrame:
    """recycle.csv from the records (a server that could not be started: one row saying why)."""
    return run_rows(results)[COLUMNS]


def capacity_life_rows(result: RecycleResult) -> list[dict]:
    """A record's capacity lives as rows of recycle_capacity.csv; each set life against the own
    life before it (its capacity over the own one's, where both met the objective)."""
    rows, own = [], None
    for life in result.capacity:
        met = life.met_rps
        if life.setting.is_own:
            own = met
        against = round(met / own, 3) if not life.setting.is_own and met is not None and own else None
        rows.append(
            {
                "profile": result.profile,
                "server": result.server,
                "language": result.language,
                "setting": life.setting.label,
                "max_requests": life.setting.max_requests,
                "jitter": life.setting.jitter,
                "life": life.life,
                "status": life.status,
                "reason": life.reason,
                "declared": life.declared,
                "limit": life.limit,
                "counts": life.counts,
                "argv": " ".join(life.argv),
                "objective_p99_ms": life.objective_p99_ms,
                "connections": life.connections,
                "peak_rps": life.peak_rps,
                "capacity_rps": met,
                "missed_rps": life.missed_rps,
                "held_by": life.held_by,
                "against_own": against,
                "workers_left": life.workers_left,
                "memory_mb": _mb(life.memory_bytes),
                "raw": life.raw,
            }
        )
    return rows


def capacity_table(results: Iterable[RecycleResult]) -> pd.DataFrame:
    """recycle_capacity.csv from the records."""
    return pd.DataFrame([row for result in results for row in capacity_life_rows(result)], columns=CAPACITY_COLUMNS)


def _check(keys: dict, name: str, value, unit: str, reason: str | None) -> dict:
    status = Status.OK if value is not None and not pd.isna(value) else Status.NOT_MEASURED
    return {
        **keys,
        "check": name,
        "value": value if status == Status.OK else None,
        "unit": unit,
        "ci_low": None,
        "ci_high": None,
        "status": status,
        "reason": None if status == Status.OK else reason,
    }


def check_rows(table: pd.DataFrame) -> pd.DataFrame:
    """recycle_checks.csv: per (profile, server) the figures offered to releases and bisect, from
    the runs' rows (``run_rows``: their ``own`` tells the server's own runs)."""
    rows = []
    for (profile, server), runs in table.groupby(["profile", "server"], sort=True):
        keys = {"profile": profile, "server": server, "language": runs["language"].iloc[0]}
        measured = runs[runs["status"] == Status.OK]
        own_runs = measured["own"].astype(bool)
        own, set_ = measured[own_runs], measured[~own_runs]
        restarts = set_["restarts"].sum()
        failed = set_["failed_near_restarts"].fillna(0).sum()
        per_restart = round(float(failed / restarts), 3) if restarts else None
        rows.append(
            _check(keys, "recycle_failed_per_restart", per_restart, "requests per restart", "no restart at a set limit")
        )
        leaks = own["leak_bytes_per_request"].dropna()
        per_10k = round(float(np.median(leaks)) * 1e4 / MB, 2) if len(leaks) else None
        rows.append(_check(keys, "leak_mb_per_10k", per_10k, "MB per 10,000 answers", "no slope of memory"))
        fresh = own[own["client"] == "fresh"]["restarts_per_10k"].dropna()
        rows.append(
            _check(
                keys,
                "own_restarts_per_10k",
                float(fresh.iloc[0]) if len(fresh) else None,
                "restarts per 10,000 fresh connections",
                "no run with fresh connections",
            )
        )
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def write_recycle(paths: Iterable[Path | str], table_csv, checks_csv, capacity_csv) -> pd.DataFrame:
    """The tables from the records at ``paths``; recycle.csv returned."""
    results = read_records(paths)
    rows = run_rows(results)
    table = rows[COLUMNS]
    files.write_atomic(table_csv, table.to_csv(index=False))
    files.write_atomic(capacity_csv, capacity_table(results).to_csv(index=False))
    files.write_atomic(checks_csv, check_rows(rows).to_csv(index=False))
    return table
