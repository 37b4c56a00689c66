"""Merges the work records into work.csv and work_detail.csv (serverbench.tables.work)."""

import sys

from serverbench.tables.work import write_work

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    write_work(snakemake.input, snakemake.output.work, snakemake.output.detail)  # noqa: F821
