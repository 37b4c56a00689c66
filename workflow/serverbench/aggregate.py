"""Cell results → tidy tables: ``runs.csv`` (a row per repeat) and
``summary.csv`` (a row per cell).

The summary follows the seed study: the best and the worst repeat are dropped
and the rest averaged (trimmed mean) from four successful repeats on, so that
at least two remain; the coefficient of variation is that of the same kept
repeats, so the spread describes the estimate it stands beside. Median, min
and max (of all repeats, for the charts' bands) are given too.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd

from serverbench import latency, results, stats
from serverbench.model import (
    AVERAGED_COLUMNS,
    CELL_KEYS,
    CONTEXT_COLUMNS,
    ERROR_CLASSES,
    RUN_COLUMNS,
    STEADY_COLUMNS,
    SUMMARY_COLUMNS,
    WORKER_COLUMNS,
    CellRecord,
    Fairness,
    LoadResult,
    Verification,
    load_record,
)

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
        server_cpus=len(record.isolation.get("server_cpus") or []) or None,
        scaled=(record.scaling or {}).get("scaled"),
        client_cpu_percent=record.client.cpu_percent,
        keepalive=verification.keepalive,
        fairness_min_over_mean=fairness.min_over_mean,
        starved_connections=fairness.starved_connections,
        http_version=verification.http_version,
        server_version=record.server.version,
        interpreter=record.server.interpreter,
        flags=";".join(record.flags),
        job_start=record.timing.get("job_start"),
        job_end=record.timing.get("job_end"),
        result=str(path),
    )
    return row


def load_runs(paths) -> pd.DataFrame:
    rows = [run_row(load_record(path), path) for path in sorted(map(str, paths))]
    frame = pd.DataFrame(rows, columns=RUN_COLUMNS)
    if not frame.empty:
        frame = frame.sort_values(CELL_KEYS + ["repeat"], kind="stable").reset_index(drop=True)
    return frame


TRIM_FROM = 4  # repeats from which the best and the worst are dropped (two at least remain)


def kept_values(values) -> list[float]:
    """The values the estimate uses: all of them, less the best and the worst from TRIM_FROM on."""
    values = sorted(v for v in values if v is not None and not pd.isna(v))
    return values[1:-1] if len(values) >= TRIM_FROM else values


def trimmed_mean(values) -> float | None:
    """Mean of the kept values (the seed study's method: best and worst dropped)."""
    kept = kept_values(values)
    return statistics.fmean(kept) if kept else None


def kept_cv(values) -> float | None:
    """Coefficient of variation of the same kept values: the spread of the estimate's own inputs."""
    kept = kept_values(values)
    if len(kept) < 2 or statistics.fmean(kept) == 0:
        return None
    return statistics.stdev(kept) / statistics.fmean(kept)


def _cell_row(key, group: pd.DataFrame, thresholds: dict, confidence: float, seed: int, targets: dict) -> dict:
    """One row of summary.csv (columns: model.SUMMARY_COLUMNS) from a cell's repeats."""
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
    row["rps_cv"] = kept_cv(rps)
    row["rps_ci_low"], row["rps_ci_high"] = stats.median_ci(rps, confidence, seed)
    row["precision_reached"] = stats.relative_half_width(rps, confidence, seed)
    row["precision_target"] = targets.get(row["profile"])
    if row["precision_target"] is not None:
        row["precision_met"] = (
            row["precision_reached"] is not None and row["precision_reached"] <= row["precision_target"]
        )
    p99 = ok["latency_p99_ms"].dropna().tolist()
    row["latency_p99_median"] = statistics.median(p99) if p99 else None
    row["latency_p99_ci_low"], row["latency_p99_ci_high"] = stats.median_ci(p99, confidence, seed)
    for column in AVERAGED_COLUMNS:
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
    if len(ok) == 1:
        flags.add("single_repeat")
    row["flags"] = ";".join(sorted(flags))
    for column in CONTEXT_COLUMNS:
        values = group[column].dropna()
        row[column] = values.iloc[0] if len(values) else None
    return row


def summarise(
    runs: pd.DataFrame,
    thresholds: dict,
    confidence: float = 0.95,
    seed: int = 0,
    targets: dict | None = None,
    closed_loop_tools: set[str] | None = None,
) -> pd.DataFrame:
    """A row per cell: estimates over its repeats, with confidence intervals at ``confidence``;
    ``targets`` maps a profile to its precision, where it asks for one."""
    groups = runs.groupby(CELL_KEYS, sort=True, dropna=False)
    rows = [_cell_row(key, group, thresholds, confidence, seed, targets or {}) for key, group in groups]
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    if closed_loop_tools:
        _flag_tools_disagreeing(summary, closed_loop_tools, thresholds["tools_disagree_share"])
    return summary


def _flag_tools_disagreeing(summary: pd.DataFrame, tools: set[str], share: float) -> None:
    """Where two closed-loop tools measured one server under the same conditions, their
    median req/s must agree within ``share``; both rows are flagged where they do not."""
    measured = summary[summary["tool"].isin(tools) & summary["rps_median"].notna()]
    same = [c for c in CELL_KEYS if c != "tool"]
    for _, group in measured.groupby(same, dropna=False):
        if len(group) > 1 and group["rps_median"].max() > (1 + share) * group["rps_median"].min():
            for index in group.index:
                flags = {f for f in str(summary.at[index, "flags"] or "").split(";") if f}
                summary.at[index, "flags"] = ";".join(sorted(flags | {"tools_disagree"}))


SAMPLE_BIN_S = 0.5


def worker_samples(paths) -> pd.DataFrame:
    """Worker processes and threads over time in every measured cell (the
    autoscaling chart's data), in bins of SAMPLE_BIN_S so a long sweep stays small.
    """
    frames = []
    for path in sorted(map(str, paths)):
        record = load_record(path)
        samples = record.server.samples
        if record.status != "ok" or not samples:
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
        cell = record.cell.to_dict()
        for key in [*CELL_KEYS, "family", "repeat"]:
            binned[key] = cell[key]
        frames.append(binned)
    if not frames:
        return pd.DataFrame(columns=WORKER_COLUMNS)
    out = pd.concat(frames, ignore_index=True)[WORKER_COLUMNS]
    out["rss_mb"] = out["rss_mb"].round(3)
    return out


def steady_series(paths) -> pd.DataFrame:
    """Requests/s in each second of every measured run, where the client sockets were read."""
    rows = []
    for path in sorted(map(str, paths)):
        record = load_record(path)
        steady = record.steady or {}
        if record.status != "ok" or steady.get("status") != "ok":
            continue
        cell = record.cell.to_dict()
        for second, rps in enumerate(steady["series_rps"], start=1):
            rows.append({**{key: cell[key] for key in [*CELL_KEYS, "family", "repeat"]}, "second": second, "rps": rps})
    return pd.DataFrame(rows, columns=STEADY_COLUMNS)


def write_tables(
    paths, runs_csv, summary_csv, config: dict, workers_csv=None, steady_csv=None, rate_paths=(), latency_csv=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's tables; rate cells (``rate_paths``) go to latency.csv, their knees into summary.csv."""
    runs = load_runs(paths)
    targets = {name: profile.get("precision") for name, profile in config["profiles"].items()}
    closed = {
        name for name, tool in config["load_tools"].items() if "{rate}" not in " ".join(map(str, tool["command"]))
    }
    summary = summarise(runs, config["flags"], config["comparisons"]["confidence"], config["seed"], targets, closed)
    rates = latency.latency_table(rate_paths)
    summary = latency.with_knees(summary, rates, latency.knee_multiples(config))
    if latency_csv is not None:
        results.write_atomic(latency_csv, rates.to_csv(index=False))
    results.write_atomic(runs_csv, runs.to_csv(index=False))
    results.write_atomic(summary_csv, summary.to_csv(index=False))
    if workers_csv is not None:
        results.write_atomic(workers_csv, worker_samples(paths).to_csv(index=False))
    if steady_csv is not None:
        results.write_atomic(steady_csv, steady_series(paths).to_csv(index=False))
    return runs, summary
