"""runs.csv: a row per repeat, from the cells' records (columns: ``tables.columns.RUN_COLUMNS``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.record import flags as flagging
from serverbench.record.model import CellRecord, Fairness, LoadResult, Verification, load_record
from serverbench.tables.columns import CELL_KEYS, ERROR_CLASSES, RUN_COLUMNS

MB = 1024 * 1024


def _mb(value):
    return round(value / MB, 3) if value is not None else None


def run_row(record: CellRecord, path: str | Path) -> dict:
    """One row of runs.csv (columns: model.RUN_COLUMNS)."""
    load = record.load or LoadResult()
    usage, autoscale = record.server.usage, record.server.autoscale
    verification = record.verify or Verification()
    fairness = record.fairness or Fairness()
    row = {**record.cell.to_dict(), "status": record.status, "reason": record.reason}
    row.update(
        requests=load.requests,
        duration_s=load.duration_s,
        rps=load.requests_per_s,
        rps_full=record.windows.full_speed_rps if record.windows else None,
        near_top_share=record.windows.near_top_share if record.windows else None,
        **{f"latency_{key}_ms": getattr(load.latency_ms, key) for key in ("mean", "p50", "p90", "p99", "max")},
        transfer_bytes=load.transfer_bytes,
        errors_total=load.errors_total if record.load else None,
        error_rate=load.error_rate,
        **{f"errors_{name}": getattr(load.errors, name) if record.load else None for name in ERROR_CLASSES},
        server_cpu_s=usage.cpu_s,
        server_cpu_percent=usage.cpu_percent,
        server_rss_peak_mb=_mb(usage.rss_peak_bytes),
        server_rss_mean_mb=_mb(usage.rss_mean_bytes),
        server_pss_peak_mb=_mb(usage.pss_peak_bytes),
        server_processes_max=usage.processes_max,
        workers_start=autoscale.processes_start,
        workers_peak=autoscale.processes_peak,
        time_to_peak_s=autoscale.time_to_peak_s,
        time_to_scale_down_s=autoscale.time_to_scale_down_s,
        server_cpus=len(record.isolation.server_cpus or []) or None,
        scaled=record.scaling.scaled if record.scaling else None,
        client_cpu_percent=record.client.cpu_percent,
        keepalive=verification.keepalive,
        fairness_min_over_mean=fairness.min_over_mean,
        starved_connections=fairness.starved_connections,
        **_shares(fairness),
        http_version=verification.http_version,
        server_version=record.server.version,
        interpreter=record.server.interpreter,
        flags=flagging.joined(record.flags),
        job_start=record.timing.get("job_start"),
        job_end=record.timing.get("job_end"),
        **_host(record),
        result=str(path),
    )
    return row


def _shares(fairness: Fairness) -> dict:
    """Jain's fairness index over the connections' answers, (Σx)²/(n·Σx²) = 1/(1 + cv²) with the
    population cv the sampler kept (1: all served alike; 1/n: one connection got everything),
    the share of connections that got any answer, and what the slowest-served tenth waited."""
    cv, idle, connections = (fairness.extra.get(key) for key in ("cv", "idle_connections", "connections"))
    return {
        "fairness_jain": round(1 / (1 + cv**2), 4) if cv is not None else None,
        "answered_share": round(1 - idle / connections, 4) if connections and idle is not None else None,
        # The p90 over all connections (starved ones included) of the time between a connection's answers.
        "connection_wait_p90_ms": fairness.extra.get("wait_p90_ms"),
    }


def load_runs(paths) -> pd.DataFrame:
    rows = [run_row(load_record(path), path) for path in sorted(map(str, paths))]
    frame = pd.DataFrame(rows, columns=RUN_COLUMNS)
    if not frame.empty:
        frame = frame.sort_values(CELL_KEYS + ["repeat"], kind="stable").reset_index(drop=True)
    return frame


def _host(record: CellRecord) -> dict:
    """The machine the cell ran on, and the scheduler's job that put it there (empty before cell/6)."""
    host = record.host
    keys = ("hostname", "cpu_model", "kernel", "boot_id")
    found = {f"host_{'name' if key == 'hostname' else key}": getattr(host, key) if host else None for key in keys}
    return found | {"scheduler_job": host.scheduler_job if host else None}
