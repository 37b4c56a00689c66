"""The toy lens's table job (its TableJob's entry): toy_bytes.csv and toy_bytes_verdicts.csv."""

from serverbench import files
from toy_bytes.decide import verdicts
from toy_bytes.table import table


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    made = table(records)
    files.write_atomic(outputs["table"], made.to_csv(index=False))
    files.write_atomic(outputs["verdicts"], verdicts(made, config).to_csv(index=False))
