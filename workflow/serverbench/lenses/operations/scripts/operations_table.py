"""Merges the operations results into operations.csv (serverbench.lenses.operations.table) and
judges the declared pairs on them, operations_verdicts.csv (serverbench.lenses.operations.decide)."""

import sys

from serverbench import files
from serverbench.lenses.operations.decide import operations_verdict_table
from serverbench.lenses.operations.table import write_operations

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    write_operations(snakemake.input, snakemake.output.table)  # noqa: F821
    results = [files.read_json(path) for path in sorted(map(str, snakemake.input))]  # noqa: F821
    verdicts = operations_verdict_table(results, snakemake.config)  # noqa: F821
    files.write_atomic(snakemake.output.verdicts, verdicts.to_csv(index=False))  # noqa: F821
