"""A server in operation: cold starts, memory idle and loaded, what a worker costs, and
graceful reloads under load (docs/operations.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, Place, per_server
from serverbench.lenses.operations.report import operations_context, operations_markdown
from serverbench.tables.releases import OPERATIONS_CHECKS


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
    checks=OPERATIONS_CHECKS,
)
