"""The work lens's table job (its TableJob's entry, called by workflow/scripts/lens_job.py): its
records merged into work.csv and work_detail.csv (serverbench.lenses.work.table)."""

from serverbench.lenses.work.table import write_work


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    write_work(records, outputs["work"], outputs["detail"])
