"""A server in operation: cold starts, memory idle and loaded, what a worker costs, and
graceful reloads under load (docs/operations.md)."""

from pathlib import Path

from serverbench.lens import Check, Inputs, Layout, Lens, Place, Words, deferred, per_server
from serverbench.lenses.operations.record import OperationsMetric

operations_context, operations_markdown = deferred(f"{__name__}.report", "operations_context", "operations_markdown")


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
    return bool(matrix.profiles[cell.profile].operations)


def _section(tables: dict, inputs: Inputs) -> dict | None:
    return operations_context(
        tables["operations.csv"], tables.get("operations_verdicts.csv"), titles=inputs.language_titles
    )


LENS = Lens(
    name="operations",
    question="How does the server start, weigh and reload under load?",
    folder=Path(__file__).parent,
    profile_key="operations",
    place=Place.AFTER,
    jobs=per_server("operations", _wanted),
    tables=("operations.csv", "operations_verdicts.csv"),
    section=_section,
    markdown=operations_markdown,
    checks=CHECKS,
    words=Words(metrics=OperationsMetric),
)
