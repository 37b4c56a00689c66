"""Merges the recycle records into recycle.csv, recycle_capacity.csv and recycle_checks.csv
(serverbench.lenses.recycle.table) and judges each setting, recycle_verdicts.csv
(serverbench.lenses.recycle.decide)."""

import sys

from serverbench import files
from serverbench.lenses.recycle.decide import recycle_verdict_table
from serverbench.lenses.recycle.table import read_records, write_recycle

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    write_recycle(snakemake.input, snakemake.output.table, snakemake.output.checks, snakemake.output.capacity)  # noqa: F821
    results = read_records(snakemake.input)  # noqa: F821
    verdicts = recycle_verdict_table(results)
    files.write_atomic(snakemake.output.verdicts, verdicts.to_csv(index=False))  # noqa: F821
