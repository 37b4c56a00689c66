"""Your deployment, decided on every lens: advise's ranking checked against every lens's findings
about a deployment (``Lens.rulings``, read through the registry), per language (docs/deploy.md)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, Place, Section, deferred

(deploy_section,) = deferred(f"{__name__}.report", "deploy_section")
# The profile key of the lens ranking deployments (advise's): it says only whether a run has
# candidates to decide on; what they are, and every finding, is read through the registry.
RANKING_KEY = "advise"


def _jobs(config, matrix) -> list[str]:
    """deploy.csv where a profile of the run ranks deployments."""
    asked = any(profile.settings(RANKING_KEY) for profile in matrix.profiles.values())
    return ["deploy.csv"] if asked else []


def _section(tables: dict, inputs: Inputs) -> Section | None:
    return deploy_section(tables["deploy.csv"])


LENS = Lens(
    name="deploy",
    question="Which deployment should I run: server, workers, front, drain and recycling, each on its evidence?",
    folder=Path(__file__).parent,
    place=Place.LEAD,
    jobs=_jobs,
    tables=("deploy.csv",),
    outputs=("deploy",),
    section=_section,
)
