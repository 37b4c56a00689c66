"""operations.csv: a server in operation, one row per (profile, server, check).

Each row is a figure with its unit and interval, so that every check reads the
same way whatever it measures:

- ``cold_start_s``, ``listening_s``: from exec to the first correct answer, and to
  the port accepting connections (lives at the profile's worker count; median
  over the rounds, with the median's order-statistics interval);
- ``idle_pss_mb``, ``idle_uss_mb``: every process's proportional and private
  memory once idle, summed (the same lives); ``loaded_pss_mb``, ``loaded_uss_mb``
  the same under the reload check's load, before its first reload;
- ``pss_per_worker_mb``, ``uss_per_worker_mb``: the slope of the totals over the
  worker counts (a least-squares line over every life; its interval from the
  slope's standard error), where the command takes ``{workers}``;
- ``balance_jain``, ``balance_busiest_share``: how evenly the workers shared the
  answers (Jain's index over the profile's worker count, 1 = even, 1/n = one
  worker answered all) and the busiest one's share;
- ``step_processes_idle``, ``step_processes_peak``, ``step_rise_s``, ``step_fall_s``,
  ``step_pss_peak_mb``: a server that scales its workers, over an idle-load-idle step
  (medians over the lives);
- ``reload_failed``, ``reload_dropped_reused``, ``reload_longest_gap_s``: per
  reload (median over every reload of every round), and ``control_longest_gap_s``
  the same client without a reload; ``reload_alive`` the share of lives still
  answering after their reloads.

A check that cannot be made is a row with its status and reason (a server with
no declared reload, a server that could not start), never a missing row.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from serverbench import files
from serverbench.lenses.operations.record import ReloadStatus
from serverbench.record.vocabulary import Status
from serverbench.tables.estimates import median_ci

OPERATIONS_COLUMNS = [
    "profile",
    "server",
    "language",
    "check",
    "value",
    "unit",
    "ci_low",
    "ci_high",
    "n",
    "status",
    "reason",
]
MB = 1024**2
BALANCE_CHECKS = ("balance_jain", "balance_busiest_share")
CONFIDENCE = 0.95


def _row(result: dict, check: str, unit: str, values=None, status=Status.OK, reason=None, **figures) -> dict:
    """One check of one server: the median of ``values`` with its interval, or given ``figures``."""
    row = {"profile": result["profile"], "server": result["server"], "language": result["language"]}
    row.update(check=check, unit=unit, status=status, reason=reason)
    if values is not None:
        data = [v for v in values if v is not None]
        if not data:
            return {**row, "status": Status.NOT_MEASURED, "reason": reason or "no life gave this figure", "n": 0}
        low, high = median_ci(data, CONFIDENCE)
        row.update(value=float(np.median(data)), ci_low=low, ci_high=high, n=len(data))
    return {**row, **figures}


def _slope(lives: list[dict], key: str) -> dict | None:
    """MB per extra worker: the least-squares slope of ``key`` over the lives' worker counts."""
    points = [(life["workers"], life[key] / MB) for life in lives if life[key] is not None]
    if len({workers for workers, _ in points}) < 2 or len(points) < 3:
        return None
    fit = stats.linregress(*zip(*points, strict=True))
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, len(points) - 2) * fit.stderr
    return {"value": fit.slope, "ci_low": fit.slope - half, "ci_high": fit.slope + half, "n": len(points)}


def _lives(result: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """(every life that ran, those at the profile's worker count, those with the reload check)."""
    lives = [life for life in result["lives"] if life["status"] == Status.OK]
    reloading = [life for life in lives if life.get("reload") is not None]
    at_profile = [life for life in lives if life["workers"] == (reloading[0]["workers"] if reloading else None)]
    return lives, at_profile or lives, reloading


def samples(result: dict) -> dict[str, list[float]]:
    """The figures behind the checks that compare between servers (decide.operations): one
    per life (cold start, memory) or per reload, as the table's medians are taken over."""
    if result["status"] in (Status.SKIPPED, Status.FAILED):
        return {}
    _, at_profile, reloading = _lives(result)
    loaded = [life["reload"].get("loaded_memory") or {} for life in reloading]
    found = {
        "cold_start_s": [life["cold_start_s"] for life in at_profile],
        "idle_uss_mb": [_mb(life["uss_bytes"]) for life in at_profile],
        "loaded_uss_mb": [_mb(memory.get("uss_bytes")) for memory in loaded],
    }
    if result["reload_trigger"] is not None:
        windows = [window for life in reloading for window in life["reload"].get("reloads", [])]
        found["reload_failed"] = [window["failed"] for window in windows]
        found["reload_longest_gap_s"] = [window["longest_gap_s"] for window in windows]
    return {check: [v for v in values if v is not None] for check, values in found.items()}


def server_rows(result: dict) -> list[dict]:
    """The checks of one server's operations result."""
    if result["status"] in (Status.SKIPPED, Status.FAILED):
        return [_row(result, "cold_start_s", "s", status=result["status"], reason=result["reason"])]
    lives, at_profile, reloading = _lives(result)
    rows = [
        _row(result, "cold_start_s", "s", [life["cold_start_s"] for life in at_profile]),
        _row(result, "listening_s", "s", [life["listening_s"] for life in at_profile]),
        _row(result, "idle_pss_mb", "MB", [_mb(life["pss_bytes"]) for life in at_profile]),
        _row(result, "idle_uss_mb", "MB", [_mb(life["uss_bytes"]) for life in at_profile]),
    ]
    for key, check in (("pss_bytes", "pss_per_worker_mb"), ("uss_bytes", "uss_per_worker_mb")):
        slope = _slope(lives, key) if result["workers_vary"] else None
        why = "the command does not take {workers}" if not result["workers_vary"] else "fewer than two worker counts"
        rows.append(
            _row(result, check, "MB", **slope)
            if slope
            else _row(result, check, "MB", status=Status.NOT_MEASURED, reason=why)
        )
    return rows + _balance_rows(result, reloading) + _step_rows(result, reloading) + _reload_rows(result, reloading)


STEP_CHECKS = [
    ("step_processes_idle", "processes", "processes_idle"),
    ("step_processes_peak", "processes", "processes_peak"),
    ("step_rise_s", "s", "rise_s"),
    ("step_fall_s", "s", "fall_s"),
]


def _step_rows(result: dict, loaded: list[dict]) -> list[dict]:
    """A scaling server over a step of load (cell.operations.step_load): its processes idle and
    at the peak, the seconds to rise to the peak and to fall back, the PSS at its most."""
    steps = [life["step"] for life in loaded if life.get("step")]
    if not result.get("scales") or not steps:
        return []
    never = "it did not fall back to its idle processes within the step's after_s in any life"
    rows = []
    for check, unit, key in STEP_CHECKS:
        values = [step[key] for step in steps]
        unmeasured = all(value is None for value in values)
        rows.append(_row(result, check, unit, values, reason=never if unmeasured and key == "fall_s" else None))
    return rows + [_row(result, "step_pss_peak_mb", "MB", [_mb(step["pss_peak_bytes"]) for step in steps])]


def _balance_rows(result: dict, loaded: list[dict]) -> list[dict]:
    """Jain's index over the workers' shares of the answers, and the busiest worker's share."""
    found = [life["balance"] for life in loaded if life.get("balance")]
    measured = [b for b in found if b["status"] == Status.OK]
    if not measured:
        why = found[0]["reason"] if found else "no life measured it"
        return [_row(result, check, "", status=Status.NOT_MEASURED, reason=why) for check in BALANCE_CHECKS]
    return [
        _row(result, "balance_jain", "index", [b["jain"] for b in measured]),
        _row(result, "balance_busiest_share", "share of answers", [b["busiest_share"] for b in measured]),
    ]


def _reload_rows(result: dict, reloading: list[dict]) -> list[dict]:
    checks = [
        ("reload_failed", "requests", "failed"),
        ("reload_dropped_reused", "requests", "dropped_reused"),
        ("reload_longest_gap_s", "s", "longest_gap_s"),
    ]
    # Memory under load is read in the loaded life, before its first reload (if it has one).
    loaded = [life["reload"].get("loaded_memory") or {} for life in reloading]
    rows_loaded = [
        _row(result, "loaded_pss_mb", "MB", [_mb(memory.get("pss_bytes")) for memory in loaded]),
        _row(result, "loaded_uss_mb", "MB", [_mb(memory.get("uss_bytes")) for memory in loaded]),
    ]
    if result["reload_trigger"] is None:
        why = "the catalogue declares no graceful reload for this server"
        return rows_loaded + [
            _row(result, check, unit, status=ReloadStatus.NOT_DECLARED, reason=why) for check, unit, _ in checks
        ]
    windows = [window for life in reloading for window in life["reload"].get("reloads", [])]
    controls = [life["reload"]["control"] for life in reloading if life["reload"].get("control")]
    broken = [life["reload"]["reason"] for life in reloading if life["reload"]["status"] == ReloadStatus.BROKEN]
    rows = rows_loaded + [_row(result, check, unit, [w[key] for w in windows]) for check, unit, key in checks]
    rows.append(_row(result, "control_longest_gap_s", "s", [w["longest_gap_s"] for w in controls]))
    alive = sum(1 for life in reloading if life["reload"].get("alive_after"))
    rows.append(
        _row(
            result,
            "reload_alive",
            "share of lives",
            value=alive / len(reloading) if reloading else None,
            n=len(reloading),
            status=ReloadStatus.BROKEN if broken else Status.OK,
            reason=broken[0] if broken else None,
        )
    )
    return rows


def _mb(value: int | None) -> float | None:
    return None if value is None else value / MB


def operations_table(paths) -> pd.DataFrame:
    """Every server's operations result, a row per check."""
    rows = []
    for path in sorted(map(str, paths)):
        rows += server_rows(json.loads(Path(path).read_text()))
    return pd.DataFrame(rows, columns=OPERATIONS_COLUMNS)


def write_operations(paths, out) -> None:
    files.write_atomic(out, operations_table(paths).to_csv(index=False))
