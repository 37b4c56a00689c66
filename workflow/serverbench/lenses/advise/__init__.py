"""Your deployment, decided: each server's settings searched for the most capacity at the
p99 objective within the memory budget (docs/advise.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, Place, deferred, per_server
from serverbench.lenses.advise.settings import AdviseSettings

advice_markdown, print_advice = deferred(f"{__name__}.report", "advice_markdown", "print_advice")


def _wanted(config, matrix, cell) -> bool:
    return bool(matrix.profiles[cell.profile].settings("advise"))


def _section(tables: dict, inputs: Inputs) -> dict | None:
    # Its chart needs Altair: loaded where the page is made, not where the workflow is parsed.
    from serverbench.lenses.advise.page import advice_context

    return advice_context(tables["advice.csv"], tables["advice_recommendations.csv"])


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
    markdown=advice_markdown,
    console=lambda results, inputs: print_advice(results / "advice_recommendations.csv"),
)
