"""Writes verdicts.csv from the run's tables (serverbench.decide.verdicts)."""

import pandas as pd
from serverbench.decide.verdicts import verdict_table
from serverbench.files import write_atomic

verdicts = verdict_table(
    pd.read_csv(snakemake.input.runs),  # noqa: F821 (injected by Snakemake)
    pd.read_csv(snakemake.input.summary),  # noqa: F821
    snakemake.config,  # noqa: F821
    pd.read_csv(snakemake.input.latency),  # noqa: F821
    windows=pd.read_csv(snakemake.input.windows),  # noqa: F821
)
write_atomic(snakemake.output[0], verdicts.to_csv(index=False))  # noqa: F821
