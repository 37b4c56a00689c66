"""The lens interface: what every lens declares, so that the workflow, the page, answers.md
and the console loop over lenses without naming one (docs/architecture.md).

A lens is a folder of ``serverbench.lenses`` (or any importable package a config names in
``lenses``) whose ``__init__`` holds ``LENS``, a :class:`Lens`. Its folder keeps its rules
(``rules.smk``, included by the Snakefile), its thin scripts and its page section
(``section.html.j2``). The core imports no lens: the registry (``serverbench.registry``)
collects them and hands their sections to the page.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class Place(StrEnum):
    """Where a lens's section stands on the page and in answers.md."""

    LEAD = "lead"  # before the timed answers: what a deployer acts on first
    AFTER = "after"  # after the timed answers and their spread
    # Its sentences close the Answers (the page's ``answers`` of its context; answers.md: its
    # markdown right after the timed answers, before the lenses after them), its tables close
    # the page, after the seed studies (the HTTP checks).
    CLOSING = "closing"


class Layout(StrEnum):
    """How the table of a lens offering a check holds the check's figure."""

    COLUMN = "column"  # a column named as the check, one row per (profile, server): work.csv
    ROW = "row"  # a row per check (its `check` column) with value, unit, ci_low, ci_high, status, reason


@dataclass(frozen=True)
class Check:
    """A check a lens offers to releases and bisect (``Lens.checks``): one figure of one of its
    tables per (profile, server), where it is and how it is shown, and, where a release is
    judged on it, the verdict table that judges it. The releases lens reads the other lenses
    only through these."""

    name: str
    # The column's title on the releases page.
    title: str
    # The lens's table holding the figure (a file name below the results directory).
    table: str
    layout: Layout
    # The unit where the table does not give one (a column layout).
    unit: str | None = None
    # The lens's verdict table judging releases on it (kinds release and release step), and how
    # a change reads in a sentence; None where a release is shown it, not judged on it.
    verdicts: str | None = None
    change: str | None = None
    # The verdict table's column holding the estimate, and the scale where it has no `scale` column.
    estimate: str = "estimate"
    scale: str = "ratio"
    # How a figure and a ratio are written (str.format fields: value, unit).
    figure: str = "{value:.3g} {unit}"
    ratio_digits: int = 2
    # A figure counted per request (not timed): the dotted config key of the margin within which
    # two deployments' figures are the same. Another lens (front) compares on every such check.
    margin_key: str | None = None

    @property
    def judged(self) -> bool:
        """Whether a release is judged on it (and bisect may look for its change)."""
        return self.verdicts is not None


@dataclass(frozen=True)
class ForestPanel:
    """A panel a lens adds to the forest of comparisons, below the timed one, on an axis of its
    own: the rows of its verdict table with an interval (columns profile, workload, a, b, kind,
    ratio, ci_low, ci_high, outcome, why)."""

    table: str  # its verdict table (a file name below the results directory)
    title: tuple[str, ...]  # the title's lines, the band's line added below them
    axis: str
    outcomes: tuple[str, ...]  # the outcomes' order in the legend, each with its colour
    colours: tuple[str, ...]
    # Its margin, from the config.
    margin: Callable[[Mapping], float]


@dataclass(frozen=True)
class Bisection:
    """What ``serverbench bisect`` reads of the lens that judges a release against the one
    before it (``Lens.bisection``), so that bisect names no lens: the table a step's run makes
    and how its rows say a check changed, and the checks the lens makes itself."""

    # The verdict table a step's run makes (a file name below its results directory), its
    # column `relation`'s word for a release against the one before it, and the outcomes that
    # say a check changed.
    verdicts: str
    previous: str
    changed: frozenset[str]
    # The lens's own table, whose `installed` check row says why a release has no verdict.
    table: str
    installed: str
    # The checks the lens makes itself that bisect may look for, each with the config key that
    # must be on for a step to make it (the others' checks are in ``Inputs.checks``).
    own_checks: Mapping[str, str]
    # The sentence naming a release's change: (its verdict row, every offered check) -> str.
    sentence: Callable[[Mapping, tuple[Check, ...]], str]


@dataclass(frozen=True)
class Section:
    """What a lens gives the page and answers.md, made from its tables."""

    lens: str
    place: Place
    template: Path
    context: dict
    markdown: str
    # Where the lens decided what the run's first paragraph leads with.
    lead: dict | None = None


@dataclass(frozen=True)
class Inputs:
    """What every lens's section may read besides its own tables."""

    config: Mapping
    language_titles: Mapping[str, str]
    # Every check the run's lenses offer (``Lens.checks``), in the registry's order.
    checks: tuple[Check, ...] = ()


# A lens's jobs in a run: their result files below the results directory (config, matrix).
Jobs = Callable[[Mapping, object], list[str]]


@dataclass(frozen=True)
class Lens:
    """One question the workflow answers, and everything the core needs to wire it."""

    name: str
    # One sentence for people: `serverbench list` and the page read it.
    question: str
    folder: Path
    place: Place
    # Its jobs' result files below the results directory, sorted (none: the run does not ask).
    jobs: Jobs
    # Its tables below the results directory, made where it has at least one job.
    tables: tuple[str, ...]
    # Further outputs of its table rule (a directory of configurations, say).
    outputs: tuple[str, ...] = ()
    # Its section from its tables (present ones, by file name), or None where nothing to show.
    section: Callable[[Mapping[str, Path], Inputs], dict | None] | None = None
    markdown: Callable[[dict], str] | None = None
    # Its lines at the end of a run, from its tables in the results directory.
    console: Callable[[Path, Inputs], None] | None = None
    # The profile key that asks for it (`front: {...}`), where a profile does; None: every run.
    profile_key: str | None = None
    # Its jobs run before a profile's timed rounds and count towards its measuring budget.
    before_rounds: bool = False
    # The checks it offers to releases and bisect (its figures a release is shown, or judged, on).
    checks: tuple[Check, ...] = ()
    # A panel it adds to the forest of comparisons (the page's chart of every interval).
    forest: ForestPanel | None = None
    # Whether a profile (as written) asks for it, where its profile_key does not say (releases).
    asks: Callable[[Mapping], bool] | None = None
    # What bisect reads of it, where it is the lens that judges a release against the one before.
    bisection: Bisection | None = None

    def asked_by(self, profile: Mapping) -> bool:
        """Whether a profile (as written) asks for this lens: its key set, or the lens's own test."""
        if self.asks is not None:
            return self.asks(profile)
        return bool(self.profile_key and profile.get(self.profile_key))

    @property
    def rules(self) -> Path:
        return self.folder / "rules.smk"

    @property
    def template(self) -> Path:
        return self.folder / "section.html.j2"


def section_of(lens: Lens, tables: Iterable[Path | str], inputs: Inputs) -> Section | None:
    """A lens's section from the tables it made this run (None where it made none or has none)."""
    present = {Path(path).name: Path(path) for path in tables}
    if lens.section is None or not present:
        return None
    context = lens.section(present, inputs)
    if context is None:
        return None
    markdown = lens.markdown(context) if lens.markdown else ""
    return Section(lens.name, lens.place, lens.template, context, markdown, context.get("lead"))


def per_server(record_dir: str, wanted: Callable[[Mapping, object, object], bool]) -> Jobs:
    """A job per (profile, server) of the cells it is wanted for (config, matrix, cell):
    ``RECORD_DIR/PROFILE/SERVER.json``."""

    def jobs(config, matrix) -> list[str]:
        pairs = {(cell.profile, cell.server) for cell in matrix.cells if wanted(config, matrix, cell)}
        return [f"{record_dir}/{profile}/{server}.json" for profile, server in sorted(pairs)]

    return jobs


def deferred(module: str, *names: str) -> tuple[Callable, ...]:
    """Functions of ``module`` (a lens's words: its ``report``) imported when first called, so a
    lens's entry names them without importing pandas into every job that only measures (0.2–0.5 s
    a job: the registry reads every lens's entry)."""

    def later(name: str) -> Callable:
        def call(*args, **kwargs):
            return getattr(importlib.import_module(module), name)(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        return call

    return tuple(later(name) for name in names)
