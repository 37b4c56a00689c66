"""Does the server need a front? Each server bare and behind a buffering reverse proxy, side
by side, under fast and slow clients (docs/front.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, MeasureJob, Place, Section, Words, deferred, per_server
from serverbench.lenses.front.findings import RULINGS
from serverbench.lenses.front.record import FrontKind, FrontMetric
from serverbench.lenses.front.settings import FrontSettings
from serverbench.plan.fronts import is_fronted

(front_section,) = deferred(f"{__name__}.report", "front_section")


def _wanted(config, matrix, cell) -> bool:
    """Each server of a profile with `front` that is not itself a deployment behind a front."""
    return bool(matrix.profiles[cell.profile].settings("front")) and not is_fronted(config["catalogue"][cell.server])


def _section(tables: dict, inputs: Inputs) -> Section | None:
    return front_section(tables["front.csv"], tables["front_verdicts.csv"])


LENS = Lens(
    name="front",
    question="Does the server need a reverse proxy in front of it?",
    folder=Path(__file__).parent,
    profile_key="front",
    settings=FrontSettings,
    # Its settings enter the timed cells' conditions digest, as they always have: taking them out
    # would change every stored cell's digest and measure it again.
    conditions=True,
    place=Place.LEAD,
    jobs=per_server("front", _wanted),
    tables=("front.csv", "front_verdicts.csv"),
    section=_section,
    # Its table job reads the counted checks other lenses offer: a rule of its own (rules.smk).
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_front",
        record="front/{profile}/{server}.json",
        message="{wildcards.server} bare and behind a front, under fast and slow clients (profile {wildcards.profile})",
        database=False,
    ),
    words=Words(kinds=FrontKind, metrics=FrontMetric),
    rulings=RULINGS,
)
