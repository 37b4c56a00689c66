"""advice.csv (serverbench.lenses.advise.table), the recommendations (serverbench.lenses.advise.decide) and
each server's configuration (serverbench.lenses.advise.deploy)."""

import sys

from serverbench import files
from serverbench.lenses.advise.decide import recommendations
from serverbench.lenses.advise.deploy import write_configurations
from serverbench.lenses.advise.table import advice_table, read_records

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    records = read_records(snakemake.input)  # noqa: F821
    files.write_atomic(snakemake.output.table, advice_table(records).to_csv(index=False))  # noqa: F821
    ranked = recommendations(records)
    files.write_atomic(snakemake.output.recommendations, ranked.to_csv(index=False))  # noqa: F821
    write_configurations(snakemake.config, ranked, snakemake.output.configurations)  # noqa: F821
