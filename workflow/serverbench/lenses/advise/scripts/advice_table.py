"""advice.csv (serverbench.tables.advice), the recommendations (serverbench.decide.advice) and
each server's configuration (serverbench.report.deploy)."""

import sys

from serverbench import files
from serverbench.decide.advice import recommendations
from serverbench.report.deploy import write_configurations
from serverbench.tables.advice import advice_table, read_records

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    records = read_records(snakemake.input)  # noqa: F821
    files.write_atomic(snakemake.output.table, advice_table(records).to_csv(index=False))  # noqa: F821
    ranked = recommendations(records)
    files.write_atomic(snakemake.output.recommendations, ranked.to_csv(index=False))  # noqa: F821
    write_configurations(snakemake.config, ranked, snakemake.output.configurations)  # noqa: F821
