"""Merges the work records into work.csv and work_detail.csv (serverbench.lenses.work.table)."""

import sys

from serverbench.lenses.work.table import write_work

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    write_work(snakemake.input, snakemake.output.work, snakemake.output.detail)  # noqa: F821
