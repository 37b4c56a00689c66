"""Is the next release safe? Each release of a server installed side by side and measured by
the lenses that offer checks, each against the baseline and the release before (docs/releases.md)."""

from pathlib import Path

from serverbench.lens import Bisection, Inputs, Lens, Place, Section, Words, deferred
from serverbench.lenses.releases.record import ReleaseOutcome
from serverbench.plan.releases import install_record_name, releases_in, split_name
from serverbench.record.vocabulary import DECIDED

# The checks this lens makes itself (releases.csv's `check`), here where reading them needs no pandas.
INSTALLED, CONFORMANCE_CHECK = "installed", "conformance_met"
# What a release is compared with (release_verdicts.csv's `relation`), and the outcomes that
# say it changed a check.
BASELINE, PREVIOUS = "baseline", "previous"
CHANGED = frozenset({*DECIDED, ReleaseOutcome.CHANGED})

releases_section, change_sentence = deferred(f"{__name__}.report", "releases_section", "change_sentence")

# What bisect reads of a step's run: the first release of a range whose check changed from the
# release before it, in release_verdicts.csv; conformance's check needs the probes on (config
# `conformance`).
BISECTION = Bisection(
    verdicts="release_verdicts.csv",
    previous=PREVIOUS,
    changed=CHANGED,
    table="releases.csv",
    installed=INSTALLED,
    own_checks={CONFORMANCE_CHECK: "conformance"},
    sentence=change_sentence,
)


def _jobs(config, matrix) -> list[str]:
    """The install record of every release the run measures."""
    servers = sorted({cell.server for cell in matrix.cells})
    return [f"releases/install/{install_record_name(spec)}" for spec in releases_in(config, servers)]


def _asks(profile) -> bool:
    """A profile that names a release of a server (SERVER@VERSION)."""
    servers = profile.get("servers")
    return isinstance(servers, list) and any(split_name(server) for server in servers)


def _section(tables: dict, inputs: Inputs) -> Section | None:
    return releases_section(tables["releases.csv"], tables["release_verdicts.csv"], inputs.checks)


LENS = Lens(
    name="releases",
    question="Is the next release of a server safe: what did each release change from the one before?",
    folder=Path(__file__).parent,
    place=Place.LEAD,
    jobs=_jobs,
    tables=("releases.csv", "release_verdicts.csv"),
    section=_section,
    asks=_asks,
    bisection=BISECTION,
    words=Words(outcomes=ReleaseOutcome),
)
