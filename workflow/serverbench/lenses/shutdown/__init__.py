"""Does a deploy drop requests? A server stopped under load, as its catalogue's `stop` declares:
every request counted by what it met, the stop timed from its signal (docs/shutdown.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, Place, deferred, per_server

shutdown_context, shutdown_markdown, shutdown_console = deferred(
    f"{__name__}.report", "shutdown_context", "shutdown_markdown", "shutdown_console"
)
PROFILE_KEY = "shutdown"


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].lens_settings.get(PROFILE_KEY))


def _section(tables: dict, inputs: Inputs) -> dict | None:
    return shutdown_context(tables.get("shutdown.csv"), tables.get("shutdown_verdicts.csv"))


LENS = Lens(
    name="shutdown",
    question="Does a deploy drop requests?",
    folder=Path(__file__).parent,
    profile_key=PROFILE_KEY,
    place=Place.AFTER,
    jobs=per_server("shutdown", _wanted),
    tables=("shutdown.csv", "shutdown_verdicts.csv"),
    section=_section,
    markdown=shutdown_markdown,
    console=shutdown_console,
)
