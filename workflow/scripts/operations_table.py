"""Merges the operations results into operations.csv (serverbench.tables.operations)."""

import sys

from serverbench.tables.operations import write_operations

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    write_operations(snakemake.input, snakemake.output[0])  # noqa: F821
