"""The advise lens's table job (its TableJob's entry, called by workflow/scripts/lens_job.py):
advice.csv (serverbench.lenses.advise.table), the recommendations (serverbench.lenses.advise.decide)
and each server's configuration (serverbench.lenses.advise.deploy)."""

from serverbench import files
from serverbench.lenses.advise.decide import recommendations
from serverbench.lenses.advise.deploy import write_configurations
from serverbench.lenses.advise.table import advice_table, read_records


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    made = read_records(records)
    files.write_atomic(outputs["table"], advice_table(made).to_csv(index=False))
    ranked = recommendations(made)
    files.write_atomic(outputs["recommendations"], ranked.to_csv(index=False))
    write_configurations(config, ranked, outputs["configurations"])
