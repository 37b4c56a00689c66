"""toy_bytes.csv and toy_bytes_verdicts.csv."""

from serverbench import files
from toy_bytes.decide import verdicts
from toy_bytes.table import table

made = table(snakemake.input.records)  # noqa: F821 (injected by Snakemake)
files.write_atomic(snakemake.output.table, made.to_csv(index=False))  # noqa: F821
files.write_atomic(snakemake.output.verdicts, verdicts(made, snakemake.config).to_csv(index=False))  # noqa: F821
