"""Workers that restart: recycling under load, and the memory it is there to bound
(docs/recycle.md)."""

from pathlib import Path

from serverbench.lens import (
    Check,
    Inputs,
    Layout,
    Lens,
    MeasureJob,
    Place,
    Section,
    TableJob,
    Words,
    deferred,
    per_server,
)
from serverbench.lenses.recycle.findings import RULINGS
from serverbench.lenses.recycle.record import RecycleKind, RecycleMetric
from serverbench.lenses.recycle.settings import RecycleSettings

(recycle_section,) = deferred(f"{__name__}.report", "recycle_section")


# What it offers to releases and bisect: shown beside a release, not judged (one run a side).
CHECKS = (
    Check("recycle_failed_per_restart", "failed / restart", "recycle_checks.csv", Layout.ROW),
    Check("leak_mb_per_10k", "leak / 10k answers", "recycle_checks.csv", Layout.ROW),
    Check("own_restarts_per_10k", "own restarts / 10k", "recycle_checks.csv", Layout.ROW),
)


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].settings("recycle"))


def _section(tables: dict, inputs: Inputs) -> Section | None:
    if "recycle.csv" not in tables:
        return None
    return recycle_section(
        tables["recycle.csv"], tables.get("recycle_verdicts.csv"), tables.get("recycle_capacity.csv")
    )


LENS = Lens(
    name="recycle",
    question="Do your workers restart, and what does it cost?",
    folder=Path(__file__).parent,
    profile_key="recycle",
    settings=RecycleSettings,
    # Its own jobs alone read its settings: the timed cells' conditions leave them out.
    conditions=False,
    place=Place.AFTER,
    jobs=per_server("recycle", _wanted),
    tables=("recycle.csv", "recycle_verdicts.csv", "recycle_checks.csv", "recycle_capacity.csv"),
    section=_section,
    checks=CHECKS,
    before_rounds=True,
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_recycle",
        record="recycle/{profile}/{server}.json",
        message="restarting {wildcards.server}'s workers under load (profile {wildcards.profile})",
    ),
    table_job=TableJob(
        entry=f"{__name__}.scripts.recycle_table:write_tables",
        outputs={
            "table": "recycle.csv",
            "verdicts": "recycle_verdicts.csv",
            "checks": "recycle_checks.csv",
            "capacity": "recycle_capacity.csv",
        },
        # What releases and bisect are shown, not a table for Snakemake's report.
        unshown=("checks",),
    ),
    words=Words(kinds=RecycleKind, metrics=RecycleMetric),
    rulings=RULINGS,
)
