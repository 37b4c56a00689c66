"""The operations lens's table job (its TableJob's entry, called by workflow/scripts/lens_job.py):
its results merged into operations.csv (serverbench.lenses.operations.table) and the declared pairs
judged on them, operations_verdicts.csv (serverbench.lenses.operations.decide)."""

from serverbench import files
from serverbench.lenses.operations.decide import operations_verdict_table
from serverbench.lenses.operations.table import write_operations


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    write_operations(records, outputs["table"])
    results = [files.read_json(path) for path in sorted(map(str, records))]
    verdicts = operations_verdict_table(results, config)
    files.write_atomic(outputs["verdicts"], verdicts.to_csv(index=False))
