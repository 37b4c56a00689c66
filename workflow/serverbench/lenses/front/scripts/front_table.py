"""front.csv (serverbench.lenses.front.table) and front_verdicts.csv (serverbench.lenses.front.decide)."""

import sys

from serverbench import files
from serverbench.lenses.front.decide import front_verdicts
from serverbench.lenses.front.table import counted_rows, front_table, read_records

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    table = front_table(read_records(snakemake.input.records))  # noqa: F821
    files.write_atomic(snakemake.output.table, table.to_csv(index=False))  # noqa: F821
    counted = counted_rows(snakemake.params.checks, list(snakemake.input.counted), snakemake.config)  # noqa: F821
    verdicts = front_verdicts(table, counted, snakemake.config)  # noqa: F821
    files.write_atomic(snakemake.output.verdicts, verdicts.to_csv(index=False))  # noqa: F821
