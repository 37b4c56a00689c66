"""The columns of the run's tables: runs.csv, summary.csv, workers.csv, steady.csv and latency.csv."""

from serverbench.record.model import ERROR_CLASSES

# What identifies a cell in the tables (a row of summary.csv; runs.csv adds repeat).
CELL_KEYS = ["profile", "workload", "tool", "server", "language", "concurrency"]
# The condition under which two servers' cells are compared (a comparison's row keys)...
CONDITION = ["profile", "workload", "tool", "concurrency"]
# ... and under which the work lens counts them (no load tool, one connection).
WORK_CONDITION = ["profile", "workload"]
RUN_COLUMNS = [
    "workload",
    "profile",
    "app",
    "tool",
    "server",
    "language",
    "family",
    "concurrency",
    "repeat",
    "status",
    "reason",
    "requests",
    "duration_s",
    "rps",
    "rps_full",
    "near_top_share",
    "latency_mean_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "transfer_bytes",
    "errors_total",
    "error_rate",
    *(f"errors_{name}" for name in ERROR_CLASSES),
    "server_cpu_s",
    "server_cpu_percent",
    "server_rss_peak_mb",
    "server_rss_mean_mb",
    "server_pss_peak_mb",
    "server_processes_max",
    "workers_start",
    "workers_peak",
    "time_to_peak_s",
    "time_to_scale_down_s",
    "server_cpus",
    "scaled",
    "client_cpu_percent",
    "keepalive",
    "fairness_min_over_mean",
    "starved_connections",
    "fairness_jain",
    "answered_share",
    "connection_wait_p90_ms",
    "http_version",
    "server_version",
    "interpreter",
    "flags",
    "job_start",
    "job_end",
    "host_name",
    "host_cpu_model",
    "host_kernel",
    "host_boot_id",
    "scheduler_job",
    "result",
]
# Columns of runs.csv that summary.csv averages over the ok repeats (trimmed mean, with min and max beside).
AVERAGED_COLUMNS = [
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
# Columns of runs.csv that describe the cell rather than a repeat: summary.csv keeps the first.
CONTEXT_COLUMNS = [
    "app",
    "family",
    "keepalive",
    "http_version",
    "server_version",
    "interpreter",
    "server_cpus",
    "scaled",
]
RPS_COLUMNS = ["rps_trimmed_mean", "rps_median", "rps_ci_low", "rps_ci_high", "rps_min", "rps_max", "rps_cv"]
# The CI half-width of the median as a share of it; the profile's target (precision); whether it was met.
PRECISION_COLUMNS = ["precision_reached"]
# The median p99 latency of the repeats with its bootstrap interval.
P99_COLUMNS = ["latency_p99_median", "latency_p99_ci_low", "latency_p99_ci_high"]
# A server's capacity and knee where rate cells ran (serverbench.tables.latency), on its capacity cell's row.
KNEE_COLUMNS = [
    "capacity_rps",
    "capacity_ci_low",
    "capacity_ci_high",
    "knee_fraction",
    "knee_rps",
    "knee_ci_low",
    "knee_ci_high",
    "knee_p99_ms",
    "knee_note",
]
# The cell's full-speed figure: the quantile of its windows' req/s pooled over its rounds
# (serverbench.decide.fullspeed decides with it), and the share of windows within near_top of it.
FULL_SPEED_COLUMNS = ["rps_full", "near_top_share"]
SUMMARY_COLUMNS = [
    *CELL_KEYS,
    "repeats",
    "repeats_ok",
    "status",
    "reason",
    *RPS_COLUMNS,
    *PRECISION_COLUMNS,
    *P99_COLUMNS,
    *(name for column in AVERAGED_COLUMNS for name in (column, f"{column}_min", f"{column}_max")),
    "flags",
    *CONTEXT_COLUMNS,
    *KNEE_COLUMNS,
    *FULL_SPEED_COLUMNS,
]
WORKER_COLUMNS = [*CELL_KEYS, "family", "repeat", "t", "phase", "processes", "threads", "rss_mb"]
STEADY_COLUMNS = [*CELL_KEYS, "family", "repeat", "second", "rps"]
# A window of a closed-loop run (serverbench.cell.windows): measured duration, answers, req/s.
WINDOW_COLUMNS = [*CELL_KEYS, "family", "repeat", "window", "duration_s", "answers", "rps"]
# A rate cell's row of latency.csv (open loop at a fraction of its server's capacity).
LATENCY_COLUMNS = [
    "profile",
    "workload",
    "tool",
    "server",
    "language",
    "family",
    "concurrency",
    "fraction",
    "repeat",
    "status",
    "reason",
    "capacity_tool",
    "capacity_concurrency",
    "capacity_rps",
    "capacity_ci_low",
    "capacity_ci_high",
    "offered_rps",
    "achieved_rps",
    "achieved_share",
    "not_sent",
    "duration_s",
    "requests",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_p99_9_ms",
    "latency_max_ms",
    "above_p99_9",
    "error_rate",
    "flags",
    "result",
]
