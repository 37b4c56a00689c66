"""Your deployment, decided: each server's settings searched for the most capacity at the
p99 objective within the memory budget (docs/advise.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, MeasureJob, Place, Section, TableJob, per_server
from serverbench.lenses.advise.findings import RULINGS
from serverbench.lenses.advise.settings import AdviseSettings


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].settings("advise"))


def _section(tables: dict, inputs: Inputs) -> Section | None:
    # Its chart needs Altair: loaded where the section is made, not where the workflow is parsed.
    from serverbench.lenses.advise.page import advice_section

    return advice_section(tables["advice.csv"], tables["advice_recommendations.csv"])


LENS = Lens(
    name="advise",
    question="Which server and settings serve my app the most requests within my p99 and memory?",
    folder=Path(__file__).parent,
    profile_key="advise",
    settings=AdviseSettings,
    # Its settings enter the timed cells' conditions digest, as they always have: taking them out
    # would change every stored cell's digest and measure it again.
    conditions=True,
    place=Place.LEAD,
    jobs=per_server("advice", _wanted),
    tables=("advice.csv", "advice_recommendations.csv"),
    outputs=("advice/configurations",),
    section=_section,
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_advise",
        record="advice/{profile}/{server}.json",
        message="searching {wildcards.server}'s settings (profile {wildcards.profile})",
    ),
    table_job=TableJob(
        entry=f"{__name__}.scripts.advice_table:write_tables",
        outputs={
            "table": "advice.csv",
            "recommendations": "advice_recommendations.csv",
            "configurations": "advice/configurations",
        },
        directories=("configurations",),
        rule="advice_table",
    ),
    rulings=RULINGS,
)
