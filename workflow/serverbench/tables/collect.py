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
    if latency_csv is not None:
        files.write_atomic(latency_csv, rates.to_csv(index=False))
    files.write_atomic(runs_csv, runs.to_csv(index=False))
    files.write_atomic(summary_csv, summary.to_csv(index=False))
    if workers_csv is not None:
        files.write_atomic(workers_csv, worker_samples(paths).to_csv(index=False))
    if steady_csv is not None:
        files.write_atomic(steady_csv, steady_series(paths).to_csv(index=False))
    if windows_csv is not None:
        files.write_atomic(windows_csv, window_series(paths).to_csv(index=False))
    return runs, summary
