"""Does the server need a front? Each server bare and behind a buffering reverse proxy, side
by side, under fast and slow clients (docs/front.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, Place, Words, deferred, per_server
from serverbench.lenses.front.record import FrontKind, FrontMetric
from serverbench.plan.fronts import is_fronted

front_context, front_markdown, print_front = deferred(
    f"{__name__}.report", "front_context", "front_markdown", "print_front"
)


def _wanted(config, matrix, cell) -> bool:
    """Each server of a profile with `front` that is not itself a deployment behind a front."""
    return bool(matrix.profiles[cell.profile].front) and not is_fronted(config["catalogue"][cell.server])


def _section(tables: dict, inputs: Inputs) -> dict | None:
    return front_context(tables["front.csv"], tables["front_verdicts.csv"])


LENS = Lens(
    name="front",
    question="Does the server need a reverse proxy in front of it?",
    folder=Path(__file__).parent,
    profile_key="front",
    place=Place.LEAD,
    jobs=per_server("front", _wanted),
    tables=("front.csv", "front_verdicts.csv"),
    section=_section,
    markdown=front_markdown,
    console=lambda results, inputs: print_front(results / "front_verdicts.csv"),
    words=Words(kinds=FrontKind, metrics=FrontMetric),
)
