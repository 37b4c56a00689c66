"""Merges the shutdown results into shutdown.csv (serverbench.lenses.shutdown.table) and judges
each server's stops against each other, shutdown_verdicts.csv (serverbench.lenses.shutdown.decide)."""

import sys

from serverbench import files
from serverbench.lenses.shutdown.decide import shutdown_verdict_table
from serverbench.lenses.shutdown.table import write_shutdown

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    write_shutdown(snakemake.input, snakemake.output.table)  # noqa: F821
    results = [files.read_json(path) for path in sorted(map(str, snakemake.input))]  # noqa: F821
    verdicts = shutdown_verdict_table(results)
    files.write_atomic(snakemake.output.verdicts, verdicts.to_csv(index=False))  # noqa: F821
