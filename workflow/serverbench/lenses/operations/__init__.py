"""A server in operation: cold starts, memory idle and loaded, what a worker costs, and
graceful reloads under load (docs/operations.md)."""

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
from serverbench.lenses.operations.findings import RULINGS
from serverbench.lenses.operations.record import OperationsMetric, ReloadStatus
from serverbench.lenses.operations.settings import OperationsSettings

(operations_section,) = deferred(f"{__name__}.report", "operations_section")


# What it offers to releases and bisect, each judged by its interval against its margin
# (operations_verdicts.csv).
CHECKS = tuple(
    Check(name, title, "operations.csv", Layout.ROW, verdicts="operations_verdicts.csv", change=change)
    for name, title, change in (
        ("cold_start_s", "cold start", "cold start"),
        ("idle_uss_mb", "idle USS", "private memory when idle"),
        ("loaded_uss_mb", "loaded USS", "private memory under load"),
        ("reload_failed", "failed / reload", "failed requests per graceful reload"),
        ("reload_longest_gap_s", "longest gap / reload", "longest time without an answer in a reload"),
    )
)


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].settings("operations"))


def _section(tables: dict, inputs: Inputs) -> Section | None:
    return operations_section(
        tables["operations.csv"], tables.get("operations_verdicts.csv"), titles=inputs.language_titles
    )


LENS = Lens(
    name="operations",
    question="How does the server start, weigh and reload under load?",
    folder=Path(__file__).parent,
    profile_key="operations",
    settings=OperationsSettings,
    # Its own jobs alone read its settings: the timed cells' conditions leave them out.
    conditions=False,
    place=Place.AFTER,
    jobs=per_server("operations", _wanted),
    tables=("operations.csv", "operations_verdicts.csv"),
    section=_section,
    checks=CHECKS,
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_operations",
        record="operations/{profile}/{server}.json",
        message="starting, reloading and weighing {wildcards.server} (profile {wildcards.profile})",
    ),
    table_job=TableJob(
        entry=f"{__name__}.scripts.operations_table:write_tables",
        outputs={"table": "operations.csv", "verdicts": "operations_verdicts.csv"},
    ),
    words=Words(metrics=OperationsMetric, statuses=ReloadStatus),
    rulings=RULINGS,
)
