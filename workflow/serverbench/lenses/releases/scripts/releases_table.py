"""releases.csv and release_verdicts.csv (serverbench.lenses.releases.decide.release_tables)."""

import sys

from serverbench import files
from serverbench.lens import Check
from serverbench.lenses.releases.decide import release_tables

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    made, checks = snakemake.input, [Check(**check) for check in snakemake.params.checks]  # noqa: F821
    table, verdicts = release_tables(snakemake.config, made.installs, checks, made.offered, made.conformance)  # noqa: F821
    files.write_atomic(snakemake.output.table, table.to_csv(index=False))  # noqa: F821
    files.write_atomic(snakemake.output.verdicts, verdicts.to_csv(index=False))  # noqa: F821
