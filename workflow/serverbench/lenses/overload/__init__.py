"""Past capacity: does it fall over? Each server's capacity at the p99 objective found, then
offered open loop beyond it and a burst, at its own listen backlog and a set one: every request
counted by what it met, goodput against offered, recovery after the burst (docs/overload.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, MeasureJob, Place, Section, TableJob, Words, deferred, per_server
from serverbench.lenses.overload.settings import OverloadSettings
from serverbench.lenses.overload.words import OverloadKind, OverloadMetric

(overload_section,) = deferred(f"{__name__}.report", "overload_section")
PROFILE_KEY = "overload"


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].settings(PROFILE_KEY))


def _section(tables: dict, inputs: Inputs) -> Section | None:
    return overload_section(tables.get("overload.csv"), tables.get("overload_hang.csv"))


LENS = Lens(
    name="overload",
    question="Past capacity: does it fall over?",
    folder=Path(__file__).parent,
    profile_key=PROFILE_KEY,
    settings=OverloadSettings,
    # Its own jobs alone read its settings (servers loaded outside the timed cells).
    conditions=False,
    place=Place.AFTER,
    jobs=per_server("overload", _wanted),
    tables=("overload.csv", "overload_hang.csv"),
    section=_section,
    words=Words(kinds=OverloadKind, metrics=OverloadMetric),
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_overload",
        record="overload/{profile}/{server}.json",
        message="loading {wildcards.server} past its capacity (profile {wildcards.profile})",
    ),
    table_job=TableJob(
        entry=f"{__name__}.table:write_tables", outputs={"table": "overload.csv", "hang": "overload_hang.csv"}
    ),
)
