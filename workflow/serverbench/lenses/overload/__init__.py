"""Past capacity: does it fall over? Each server's capacity at the p99 objective found, then
offered open loop beyond it and a burst, at its own listen backlog and a set one: every request
counted by what it met, goodput against offered, recovery after the burst; goodput at 2× capacity
judged over repeats: holds, sheds or collapses (docs/overload.md)."""

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
from serverbench.lenses.overload.settings import OverloadSettings
from serverbench.lenses.overload.words import OverloadKind, OverloadMetric, OverloadOutcome

(overload_section,) = deferred(f"{__name__}.report", "overload_section")
PROFILE_KEY = "overload"

# What it offers to releases and bisect, both at the set backlog by the first client (checks.py):
# a release is judged on its goodput at 2× capacity; its recovery after the burst is shown.
CHECKS = (
    Check(
        "goodput_at_2x",
        "goodput at 2× capacity",
        "overload_checks.csv",
        Layout.ROW,
        verdicts="overload_verdicts.csv",
        change="goodput at 2× capacity, as its share",
        scale="difference",
    ),
    Check("recovery_s", "recovery after the burst", "overload_checks.csv", Layout.ROW),
)


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].settings(PROFILE_KEY))


def _section(tables: dict, inputs: Inputs) -> Section | None:
    return overload_section(
        tables.get("overload.csv"), tables.get("overload_verdicts.csv"), tables.get("overload_hang.csv")
    )


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
    tables=("overload.csv", "overload_checks.csv", "overload_verdicts.csv", "overload_hang.csv"),
    section=_section,
    checks=CHECKS,
    words=Words(kinds=OverloadKind, metrics=OverloadMetric, outcomes=OverloadOutcome),
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_overload",
        record="overload/{profile}/{server}.json",
        message="loading {wildcards.server} past its capacity (profile {wildcards.profile})",
    ),
    table_job=TableJob(
        entry=f"{__name__}.decide:write_tables",
        outputs={
            "table": "overload.csv",
            "checks": "overload_checks.csv",
            "verdicts": "overload_verdicts.csv",
            "hang": "overload_hang.csv",
        },
    ),
)
