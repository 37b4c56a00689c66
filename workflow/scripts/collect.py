"""Merges cell results into runs.csv, summary.csv, latency.csv, workers.csv and steady.csv (serverbench.tables)."""

import sys

from serverbench.tables.collect import write_tables

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

write_tables(
    snakemake.input.cells,  # noqa: F821 (injected by Snakemake)
    snakemake.output.runs,  # noqa: F821
    snakemake.output.summary,  # noqa: F821
    snakemake.config,  # noqa: F821
    workers_csv=snakemake.output.workers,  # noqa: F821
    steady_csv=snakemake.output.steady,  # noqa: F821
    rate_paths=snakemake.input.rates,  # noqa: F821
    latency_csv=snakemake.output.latency,  # noqa: F821
    windows_csv=snakemake.output.windows,  # noqa: F821
)
