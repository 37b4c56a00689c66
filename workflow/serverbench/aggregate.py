"""Cell results → tidy tables: ``runs.csv`` (a row per repeat) and
``summary.csv`` (a row per cell).

The summary follows the seed study: with three or more successful repeats the
best and the worst are dropped and the rest averaged (trimmed mean); median,
min, max and the coefficient of variation are given beside it.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd

from serverbench import results

CELL_KEYS = ["profile", "workload", "tool", "server", "language", "concurrency"]
MB = 1024 * 1024


def run_row(record: dict, path: str | Path) -> dict:
    cell = record["cell"]
    load = record.get("load") or {}
    latency = load.get("latency_ms") or {}
    errors = load.get("errors") or {}
    server = record.get("server") or {}
    usage = server.get("usage") or {}
    client = record.get("client") or {}
    verification = record.get("verify") or {}
    fairness = record.get("fairness") or {}

    def mb(value):
        return round(value / MB, 3) if value is not None else None

    row = {"workload": "hello", **cell, "status": record["status"], "reason": record.get("reason")}
    autoscale = server.get("autoscale") or {}
    row.update(
        requests=load.get("requests"),
        duration_s=load.get("duration_s"),
        rps=load.get("requests_per_s"),
        latency_mean_ms=latency.get("mean"),
        latency_p50_ms=latency.get("p50"),
        latency_p90_ms=latency.get("p90"),
        latency_p99_ms=latency.get("p99"),
        latency_max_ms=latency.get("max"),
        transfer_bytes=load.get("transfer_bytes"),
        errors_total=load.get("errors_total"),
        error_rate=load.get("error_rate"),
        **{f"errors_{name}": errors.get(name) for name in ("connect", "read", "write", "timeout", "non_2xx", "other")},
        server_cpu_s=usage.get("cpu_s"),
        server_cpu_percent=usage.get("cpu_percent"),
        server_rss_peak_mb=mb(usage.get("rss_peak_bytes")),
        server_rss_mean_mb=mb(usage.get("rss_mean_bytes")),
        server_pss_peak_mb=mb(usage.get("pss_peak_bytes")),
        server_processes_max=usage.get("processes_max"),
        workers_start=autoscale.get("processes_start"),
        workers_peak=autoscale.get("processes_peak"),
        time_to_peak_s=autoscale.get("time_to_peak_s"),
        time_to_scale_down_s=autoscale.get("time_to_scale_down_s"),
        server_cpus=len((record.get("isolation") or {}).get("server_cpus") or []) or None,
        scaled=(record.get("scaling") or {}).get("scaled"),
        client_cpu_percent=client.get("cpu_percent"),
        keepalive=verification.get("keepalive"),
        fairness_min_over_mean=fairness.get("min_over_mean"),
        starved_connections=fairness.get("starved_connections"),
        http_version=verification.get("http_version"),
        server_version=server.get("version"),
        interpreter=server.get("interpreter"),
        flags=";".join(record.get("flags") or []),
        job_start=record.get("timing", {}).get("job_start"),
        job_end=record.get("timing", {}).get("job_end"),
        result=str(path),
    )
    return row


def load_runs(paths) -> pd.DataFrame:
    rows = [run_row(results.read_json(path), path) for path in sorted(map(str, paths))]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(CELL_KEYS + ["repeat"], kind="stable").reset_index(drop=True)
    return frame


def trimmed_mean(values) -> float | None:
    """Mean without the best and the worst value when there are at least three."""
    values = sorted(v for v in values if v is not None and not pd.isna(v))
    if not values:
        return None
    if len(values) >= 3:
        values = values[1:-1]
    return statistics.fmean(values)


def _cv(values) -> float | None:
    values = [v for v in values if v is not None and not pd.isna(v)]
    if len(values) < 2 or statistics.fmean(values) == 0:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


TRIMMED = [
    "latency_mean_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "error_rate",
    "server_cpu_percent",
    "server_rss_peak_mb",
    "server_pss_peak_mb",
    "client_cpu_percent",
    "fairness_min_over_mean",
    "workers_peak",
    "time_to_peak_s",
    "time_to_scale_down_s",
]


def summarise(runs: pd.DataFrame, thresholds: dict) -> pd.DataFrame:
    rows = []
    if runs.empty:
        return pd.DataFrame(columns=CELL_KEYS + ["status"])
    for key, group in runs.groupby(CELL_KEYS, sort=True, dropna=False):
        ok = group[group["status"] == "ok"]
        rps = ok["rps"].tolist()
        row = dict(zip(CELL_KEYS, key, strict=False))
        row["repeats"] = len(group)
        row["repeats_ok"] = len(ok)
        statuses = set(group["status"])
        row["status"] = "ok" if statuses == {"ok"} else ("partial" if "ok" in statuses else sorted(statuses)[0])
        reasons = sorted({r for r in group["reason"].dropna() if r})
        row["reason"] = " | ".join(reasons) if reasons else None
        row["rps_trimmed_mean"] = trimmed_mean(rps)
        row["rps_median"] = statistics.median(rps) if rps else None
        row["rps_min"] = min(rps) if rps else None
        row["rps_max"] = max(rps) if rps else None
        row["rps_cv"] = _cv(rps)
        for column in TRIMMED:
            values = [v for v in ok[column].tolist() if v is not None and not pd.isna(v)]
            row[column] = trimmed_mean(values)
            # The spread of the repeats, for the charts' error bands.
            row[f"{column}_min"] = min(values) if values else None
            row[f"{column}_max"] = max(values) if values else None
        flags = set()
        for entry in ok["flags"].dropna():
            flags.update(f for f in entry.split(";") if f)
        if row["rps_cv"] is not None and row["rps_cv"] > thresholds["cv"]:
            flags.add("unstable")
        row["flags"] = ";".join(sorted(flags))
        for column in ("family", "keepalive", "http_version", "server_version", "interpreter", "server_cpus", "scaled"):
            values = group[column].dropna() if column in group else pd.Series(dtype=object)
            row[column] = values.iloc[0] if len(values) else None
        rows.append(row)
    return pd.DataFrame(rows)


SAMPLE_BIN_S = 0.5


def worker_samples(paths) -> pd.DataFrame:
    """Worker processes and threads over time in every measured cell (the
    autoscaling chart's data), in bins of SAMPLE_BIN_S so a long sweep stays small.
    """
    frames = []
    for path in sorted(map(str, paths)):
        record = results.read_json(path)
        samples = (record.get("server") or {}).get("samples") or []
        if record.get("status") != "ok" or not samples:
            continue
        frame = pd.DataFrame(samples)
        if "phase" not in frame:
            frame["phase"] = "load"
        frame["t"] = (frame["t"] // SAMPLE_BIN_S) * SAMPLE_BIN_S
        frame["rss_mb"] = frame["rss"] / MB
        binned = (
            frame.groupby(["t", "phase"], sort=True)
            .agg(processes=("processes", "max"), threads=("threads", "max"), rss_mb=("rss_mb", "max"))
            .reset_index()
        )
        cell = {"workload": "hello", **record["cell"]}
        for key in [*CELL_KEYS, "family", "repeat"]:
            binned[key] = cell.get(key)
        frames.append(binned)
    columns = [*CELL_KEYS, "family", "repeat", "t", "phase", "processes", "threads", "rss_mb"]
    if not frames:
        return pd.DataFrame(columns=columns)
    out = pd.concat(frames, ignore_index=True)[columns]
    out["rss_mb"] = out["rss_mb"].round(3)
    return out


def write_tables(paths, runs_csv, summary_csv, thresholds: dict, workers_csv=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    runs = load_runs(paths)
    summary = summarise(runs, thresholds)
    results.write_atomic(runs_csv, runs.to_csv(index=False))
    results.write_atomic(summary_csv, summary.to_csv(index=False))
    if workers_csv is not None:
        results.write_atomic(workers_csv, worker_samples(paths).to_csv(index=False))
    return runs, summary
