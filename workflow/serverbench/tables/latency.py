"""latency.csv: a row per rate cell (latency under load, open loop), from its record."""

from __future__ import annotations

import pandas as pd

from serverbench.record import flags as flagging
from serverbench.record.model import CellRecord, load_record
from serverbench.record.sections import LoadResult, OpenLoop
from serverbench.tables.columns import LATENCY_COLUMNS

GROUP = ["profile", "workload", "server"]


def latency_row(record: CellRecord, path) -> dict:
    load, section = record.load or LoadResult(), record.open_loop or OpenLoop()
    latency = load.latency_ms
    ci = section.capacity_ci or [None, None]
    return {
        **record.cell.to_dict(),
        "status": record.status,
        "reason": record.reason,
        "capacity_tool": section.capacity_tool,
        "capacity_concurrency": section.capacity_concurrency,
        "capacity_rps": section.capacity_rps,
        "capacity_ci_low": ci[0],
        "capacity_ci_high": ci[1],
        "offered_rps": section.offered_rps,
        "achieved_rps": section.achieved_rps,
        "achieved_share": section.achieved_share,
        "not_sent": section.not_sent,
        "duration_s": load.duration_s,
        "requests": load.requests,
        "latency_p50_ms": latency.p50,
        "latency_p90_ms": latency.p90,
        "latency_p99_ms": latency.p99,
        "latency_p99_9_ms": latency.p99_9,
        "latency_max_ms": latency.max,
        "above_p99_9": section.above_p99_9,
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
