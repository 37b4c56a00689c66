"""Writes verdicts.csv from the run's tables (serverbench.verdicts)."""

import pandas as pd
from serverbench.results import write_atomic
from serverbench.verdicts import decide

verdicts = decide(
    pd.read_csv(snakemake.input.runs),  # noqa: F821 (injected by Snakemake)
    pd.read_csv(snakemake.input.summary),  # noqa: F821
    snakemake.config,  # noqa: F821
    pd.read_csv(snakemake.input.latency),  # noqa: F821
)
write_atomic(snakemake.output[0], verdicts.to_csv(index=False))  # noqa: F821
