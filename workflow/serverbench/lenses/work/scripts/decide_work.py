"""Writes work_verdicts.csv from work.csv (serverbench.lenses.work.decide)."""

import sys

import pandas as pd
from serverbench.decide.verdicts import read_verdicts
from serverbench.files import write_atomic
from serverbench.lenses.work.decide import work_verdict_table

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    table = work_verdict_table(
        pd.read_csv(snakemake.input.work),  # noqa: F821
        snakemake.config,  # noqa: F821
        read_verdicts(snakemake.input.verdicts),  # noqa: F821
    )
    write_atomic(snakemake.output[0], table.to_csv(index=False))  # noqa: F821
