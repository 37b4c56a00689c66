"""releases.csv and release_verdicts.csv (serverbench.decide.releases.release_tables)."""

import sys

from serverbench import files
from serverbench.decide.releases import release_tables

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    made = snakemake.input  # noqa: F821
    table, verdicts = release_tables(snakemake.config, made.installs, [*made.work, *made.operations], made.conformance)  # noqa: F821
    files.write_atomic(snakemake.output.table, table.to_csv(index=False))  # noqa: F821
    files.write_atomic(snakemake.output.verdicts, verdicts.to_csv(index=False))  # noqa: F821
