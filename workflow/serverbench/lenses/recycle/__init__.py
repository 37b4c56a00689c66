"""Workers that restart: recycling under load, and the memory it is there to bound
(docs/recycle.md)."""

from pathlib import Path

from serverbench.lens import Check, Inputs, Layout, Lens, Place, Words, deferred, per_server
from serverbench.lenses.recycle.record import RecycleKind, RecycleMetric

recycle_console, recycle_context, recycle_markdown = deferred(
    f"{__name__}.report", "recycle_console", "recycle_context", "recycle_markdown"
)


# What it offers to releases and bisect: shown beside a release, not judged (one run a side).
CHECKS = (
    Check("recycle_failed_per_restart", "failed / restart", "recycle_checks.csv", Layout.ROW),
    Check("leak_mb_per_10k", "leak / 10k answers", "recycle_checks.csv", Layout.ROW),
    Check("own_restarts_per_10k", "own restarts / 10k", "recycle_checks.csv", Layout.ROW),
)


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].recycle)


def _section(tables: dict, inputs: Inputs) -> dict | None:
    if "recycle.csv" not in tables:
        return None
    return recycle_context(
        tables["recycle.csv"], tables.get("recycle_verdicts.csv"), tables.get("recycle_capacity.csv")
    )


LENS = Lens(
    name="recycle",
    question="Do your workers restart, and what does it cost?",
    folder=Path(__file__).parent,
    profile_key="recycle",
    place=Place.AFTER,
    jobs=per_server("recycle", _wanted),
    tables=("recycle.csv", "recycle_verdicts.csv", "recycle_checks.csv", "recycle_capacity.csv"),
    section=_section,
    markdown=recycle_markdown,
    console=lambda results, inputs: recycle_console(results),
    checks=CHECKS,
    before_rounds=True,
    words=Words(kinds=RecycleKind, metrics=RecycleMetric),
)
