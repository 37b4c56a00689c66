"""Does a deploy drop requests? A server stopped under load, as its catalogue's `stop` declares:
every request counted by what it met, the stop timed from its signal (docs/shutdown.md)."""

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
from serverbench.lenses.shutdown.findings import RULINGS
from serverbench.lenses.shutdown.settings import ShutdownSettings
from serverbench.lenses.shutdown.words import ShutdownKind, ShutdownMetric

(shutdown_section,) = deferred(f"{__name__}.report", "shutdown_section")
PROFILE_KEY = "shutdown"

# What it offers to releases and bisect, both from the graceful stop with no delay (checks.py):
# a release is judged on the requests it lost; its seconds to exit are shown, not judged.
CHECKS = (
    Check(
        "lost_per_stop",
        "lost / stop",
        "shutdown_checks.csv",
        Layout.ROW,
        verdicts="shutdown_verdicts.csv",
        change="requests lost per graceful stop",
    ),
    Check("stop_s", "signal to exit", "shutdown_checks.csv", Layout.ROW),
)


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].settings(PROFILE_KEY))


def _section(tables: dict, inputs: Inputs) -> Section | None:
    return shutdown_section(tables.get("shutdown.csv"), tables.get("shutdown_verdicts.csv"))


LENS = Lens(
    name="shutdown",
    question="Does a deploy drop requests?",
    folder=Path(__file__).parent,
    profile_key=PROFILE_KEY,
    settings=ShutdownSettings,
    # Its own jobs alone read its settings (a server stopped outside the timed cells): the
    # cells' conditions leave them out.
    conditions=False,
    place=Place.AFTER,
    jobs=per_server("shutdown", _wanted),
    tables=("shutdown.csv", "shutdown_checks.csv", "shutdown_verdicts.csv"),
    section=_section,
    checks=CHECKS,
    words=Words(kinds=ShutdownKind, metrics=ShutdownMetric),
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_shutdown",
        record="shutdown/{profile}/{server}.json",
        message="stopping {wildcards.server} under load (profile {wildcards.profile})",
    ),
    table_job=TableJob(
        entry=f"{__name__}.decide:write_tables",
        outputs={"table": "shutdown.csv", "checks": "shutdown_checks.csv", "verdicts": "shutdown_verdicts.csv"},
    ),
    rulings=RULINGS,
)
