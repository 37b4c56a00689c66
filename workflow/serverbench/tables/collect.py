"""The run's tables from its records (rule collect): runs.csv, summary.csv (with each
server's capacity and knee where rate cells ran), latency.csv, workers.csv and steady.csv."""

from __future__ import annotations

import pandas as pd

from serverbench import files
from serverbench.plan.rates import knee_bounds
from serverbench.plan.tools import closed_loop_tools
from serverbench.tables.knees import with_knees
from serverbench.tables.latency import latency_table
from serverbench.tables.runs import load_runs
from serverbench.tables.series import steady_series, window_series, worker_samples
from serverbench.tables.summary import summarise


def write_tables(
    paths,
    runs_csv,
    summary_csv,
    config: dict,
    workers_csv=None,
    steady_csv=None,
    rate_paths=(),
    latency_csv=None,
    windows_csv=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's tables; rate cells (``rate_paths``) go to latency.csv, their knees into summary.csv."""
    runs = load_runs(paths)
    closed = closed_loop_tools(config)
    summary = summarise(runs, config["flags"], config["comparisons"]["confidence"], config["seed"], closed)
    rates = latency_table(rate_paths)
    summary = with_knees(summary, rates, knee_bounds(config), config["comparisons"]["confidence"], config["seed"])
    windows = window_series(paths)
    summary = with_full_speed(summary, windows, config.get("full_speed"))
    if latency_csv is not None:
        files.write_atomic(latency_csv, rates.to_csv(index=False))
    files.write_atomic(runs_csv, runs.to_csv(index=False))
    files.write_atomic(summary_csv, summary.to_csv(index=False))
    if workers_csv is not None:
        files.write_atomic(workers_csv, worker_samples(paths).to_csv(index=False))
    if steady_csv is not None:
        files.write_atomic(steady_csv, steady_series(paths).to_csv(index=False))
    if windows_csv is not None:
        files.write_atomic(windows_csv, windows.to_csv(index=False))
    return runs, summary


def with_full_speed(summary: pd.DataFrame, windows: pd.DataFrame, spec: dict | None) -> pd.DataFrame:
    """summary.csv's full-speed columns: each cell's windows pooled over its rounds."""
    if not spec or windows.empty:
        return summary
    keys = ["profile", "workload", "tool", "server", "concurrency"]
    grouped = windows.groupby(keys)["rps"]
    top = grouped.quantile(spec["quantile"]).rename("top")
    near = windows.join(top, on=keys)
    share = (near["rps"] >= (1 - spec["near_top"]) * near["top"]).groupby([near[k] for k in keys]).mean()
    figures = pd.DataFrame({"rps_full": top.round(2), "near_top_share": share.round(4)}).reset_index()
    merged = summary.drop(columns=["rps_full", "near_top_share"]).merge(figures, on=keys, how="left")
    return merged[summary.columns]
