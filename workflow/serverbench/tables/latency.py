"""latency.csv: a row per rate cell (latency under load, open loop), from its record."""

from __future__ import annotations

import pandas as pd

from serverbench.record import flags as flagging
from serverbench.record.model import CellRecord, LoadResult, load_record
from serverbench.tables.columns import LATENCY_COLUMNS

GROUP = ["profile", "workload", "server"]


def latency_row(record: CellRecord, path) -> dict:
    load, section = record.load or LoadResult(), record.open_loop or {}
    latency = load.latency_ms
    ci = section.get("capacity_ci") or [None, None]
    return {
        **record.cell.to_dict(),
        "status": record.status,
        "reason": record.reason,
        "capacity_tool": section.get("capacity_tool"),
        "capacity_concurrency": section.get("capacity_concurrency"),
        "capacity_rps": section.get("capacity_rps"),
        "capacity_ci_low": ci[0],
        "capacity_ci_high": ci[1],
        "offered_rps": section.get("offered_rps"),
        "achieved_rps": section.get("achieved_rps"),
        "achieved_share": section.get("achieved_share"),
        "not_sent": section.get("not_sent"),
        "duration_s": load.duration_s,
        "requests": load.requests,
        "latency_p50_ms": latency.p50,
        "latency_p90_ms": latency.p90,
        "latency_p99_ms": latency.p99,
        "latency_p99_9_ms": latency.p99_9,
        "latency_max_ms": latency.max,
        "above_p99_9": section.get("above_p99_9"),
        "error_rate": load.error_rate,
        "flags": flagging.joined(record.flags),
        "result": str(path),
    }


def latency_table(paths) -> pd.DataFrame:
    rows = [latency_row(load_record(path), path) for path in sorted(map(str, paths))]
    frame = pd.DataFrame(rows, columns=LATENCY_COLUMNS)
    if not frame.empty:
        frame = frame.sort_values([*GROUP, "fraction", "repeat"], kind="stable").reset_index(drop=True)
    return frame
