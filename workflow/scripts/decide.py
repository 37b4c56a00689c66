"""Writes verdicts.csv from the run's tables (serverbench.report.verdicts)."""

import sys

import pandas as pd
from serverbench.files import write_atomic
from serverbench.report.verdicts import verdict_table

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

verdicts = verdict_table(
    pd.read_csv(snakemake.input.runs),  # noqa: F821 (injected by Snakemake)
    pd.read_csv(snakemake.input.summary),  # noqa: F821
    snakemake.config,  # noqa: F821
    pd.read_csv(snakemake.input.latency),  # noqa: F821
    windows=pd.read_csv(snakemake.input.windows),  # noqa: F821
)
write_atomic(snakemake.output[0], verdicts.to_csv(index=False))  # noqa: F821
