"""The recycle lens's table job (its TableJob's entry, called by workflow/scripts/lens_job.py):
its records merged into recycle.csv, recycle_capacity.csv and recycle_checks.csv
(serverbench.lenses.recycle.table) and each setting judged, recycle_verdicts.csv
(serverbench.lenses.recycle.decide)."""

from serverbench import files
from serverbench.lenses.recycle.decide import recycle_verdict_table
from serverbench.lenses.recycle.table import write_recycle


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    write_recycle(records, outputs["table"], outputs["checks"], outputs["capacity"])
    results = [files.read_json(path) for path in sorted(map(str, records))]
    verdicts = recycle_verdict_table(results)
    files.write_atomic(outputs["verdicts"], verdicts.to_csv(index=False))
