"""The lens interface: what every lens declares, so that the workflow, the page, answers.md
and the console loop over lenses without naming one (docs/architecture.md).

A lens is a folder of ``serverbench.lenses`` (or any importable package a config names in
``lenses``) whose ``__init__`` holds ``LENS``, a :class:`Lens`. Its folder keeps its rules
(``rules.smk``, included by the Snakefile where it has rules of its own: the core wires its
measuring and table jobs from ``measure_job`` and ``table_job``); its ``section`` says what it
shows as a typed :class:`Section`, which the core writes to the page, answers.md and the
console. The core imports no lens: the registry (``serverbench.registry``)
collects them and hands their sections to the page.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path

# The section model is part of the lens interface: a lens imports every piece of it from here.
from serverbench.section import (
    EVERYWHERE,
    WRITTEN,
    Block,
    Cell,
    Emphasis,
    Figure,
    Group,
    Lead,
    Link,
    Medium,
    Paragraph,
    Place,
    Section,
    Sentences,
    Table,
    Template,
)


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
class RunComparison:
    """What ``serverbench compare A B`` reads of the lens that compares two runs on a figure it
    counts (``Lens.between_runs``), so that compare names no lens: its ``--metric``, the table
    both runs must hold, and its judging of run B against run A."""

    metric: str  # its --metric ("work")
    table: str  # the table both runs must hold (a file name below a results directory)
    figure: str  # what it judges, as a sentence names it ("work per request")
    title: str  # the line above its table, written as text or markdown
    # Whether a results directory holds its table.
    present: Callable[[Path], bool]
    # Its table of B against A: (a, b, config, --fail-above or None) -> a DataFrame.
    compare: Callable[[Path, Path, Mapping, float | None], object]
    # The exit status and its reason for --fail-above: (its table, the share) -> (status, why).
    exit_status: Callable[[object, float], tuple[int, str]]


@dataclass(frozen=True)
class Inputs:
    """What every lens's section may read besides its own tables."""

    config: Mapping
    language_titles: Mapping[str, str]
    # Every check the run's lenses offer (``Lens.checks``), in the registry's order.
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class Words:
    """The words a lens adds to the project's vocabulary (``record.vocabulary`` holds the core's):
    its own kinds of comparison, metrics, outcomes and statuses (a table row's, beside the core's
    ``Status``), each a ``StrEnum`` in its folder, written to its tables as their words. The
    registry refuses, when it loads the lenses, a word the core or another lens already has in the
    same field, and a malformed one (``malformed_words``)."""

    kinds: type[StrEnum] | None = None
    metrics: type[StrEnum] | None = None
    outcomes: type[StrEnum] | None = None
    statuses: type[StrEnum] | None = None

    def by_field(self) -> dict[str, tuple[StrEnum, ...]]:
        """Its words per field (kinds, metrics, outcomes, statuses), each field's members in their order."""
        return {item.name: tuple(getattr(self, item.name) or ()) for item in fields(self)}


# A lens's word as a table holds it: lower case, digits and spaces (a slash, dot, hyphen or ± inside),
# so that a CSV cell, a sentence and a `why` joined by "; " read it back as written.
WORD = re.compile(r"[a-z0-9](?:[a-z0-9 /.±-]*[a-z0-9])?")


def malformed_words(words: Words) -> list[str]:
    """Its words that are not a word as a table holds it, each with its field."""
    return [
        f"{field} {member.value!r}"
        for field, members in words.by_field().items()
        for member in members
        if not WORD.fullmatch(member.value) or "  " in member.value
    ]


class Ruling(StrEnum):
    """What a lens's finding says of a deployment (``Finding``)."""

    RULES_OUT = "rules out"  # its figure contradicts the deployment: it is not recommended
    STANDS = "stands"  # its figure measured it and found nothing against it (not "holds": a seed claim's outcome)
    NOT_MEASURED = "not measured"  # the lens did not measure it in this run


class Choice(StrEnum):
    """A choice a deployment makes, which a lens's finding bears on."""

    SERVER = "server"  # the server and its worker model (catalogue name)
    WORKERS = "workers × threads"
    FRONT = "front"  # none, or the front before it (nginx)
    BACKLOG = "listen backlog"
    KEEPALIVE = "keep-alive"  # the idle timeout a balancer's pool needs
    DRAIN = "drain"  # the stop signal and the delay before it
    RECYCLING = "recycling"


@dataclass(frozen=True)
class Evidence:
    """The figure a finding rests on, and where it is: its lens's table and the row's keys."""

    value: float | None
    unit: str
    table: str  # a file name below the results directory
    row: str  # the row's keys as the table names them ("server=gunicorn, check=reload_failed")

    def text(self) -> str:
        shown = "no figure" if self.value is None else f"{self.value:,.4g} {self.unit}"
        return f"{shown} ({self.table}: {self.row})"


@dataclass(frozen=True)
class Finding:
    """What one lens says of one deployment choice, from its own tables: per (language, server,
    setting, front); an empty language, server, setting or front stands for every one."""

    lens: str
    choice: Choice
    ruling: Ruling
    sentence: str
    evidence: Evidence | None = None
    language: str = ""
    server: str = ""
    # The choice's value it is about ("6×1", "TERM, 0 s", "nginx", "none"), empty: any.
    setting: str = ""

    def about(self, language: str, server: str) -> bool:
        """Whether it speaks of this server of this language."""
        return self.language in ("", language) and self.server in ("", server)


@dataclass(frozen=True)
class Candidate:
    """A deployment the lens that ranks them (advise) offers, in its starting order: a server at
    its chosen workers × threads, with the figures it was ranked by."""

    lens: str
    language: str
    server: str
    model: str
    workers: int
    threads: int
    capacity: Evidence  # the highest rate at the objective
    missed: Evidence | None  # the lowest rate that missed it (None: none missed)
    memory: Evidence | None
    # Its configuration's files as the lens wrote them below the results directory.
    files: tuple[str, ...] = ()

    @property
    def setting(self) -> str:
        return f"{self.workers}×{self.threads}"


@dataclass(frozen=True)
class Rulings:
    """What a lens declares about a deployment (``Lens.rulings``): the choices it speaks to, and
    its findings from its own tables in a results directory; the lens that ranks deployments
    also gives its candidates. The deploy answer reads them through the registry alone."""

    choices: tuple[Choice, ...]
    # (results directory, config) -> its findings ([] where its tables are not there).
    read: Callable[[Path, Mapping], list[Finding]]
    candidates: Callable[[Path, Mapping], list[Candidate]] | None = None


@dataclass(frozen=True)
class RunFindings:
    """Every finding the run's lenses declared (``registry.findings``): the deploy answer's input."""

    findings: tuple[Finding, ...]
    candidates: tuple[Candidate, ...]
    # Per choice, the lenses that speak to it, each with the profile that runs it.
    speakers: Mapping[Choice, tuple[tuple[str, str], ...]]
    # The lenses whose tables the run made.
    ran: frozenset[str]


# A lens's jobs in a run: their result files below the results directory (config, matrix).
Jobs = Callable[[Mapping, object], list[str]]


@dataclass(frozen=True)
class MeasureJob:
    """A lens's measuring job, which the core wires as it wires a cell (workflow/rules/lenses.smk):
    a rule named as the lens, a job per record its ``jobs`` lists, after every install, pinned to
    the cell's CPUs and memory, run through the one shim (workflow/scripts/lens_job.py)."""

    # What it runs, "module:function", called (config, profile, server, *the record's further
    # wildcards in its order, json_path=, log_path=).
    entry: str
    # Its record's path pattern below the results directory ("front/{profile}/{server}.json");
    # its log is the same below logs/, ending .log.
    record: str
    # The line Snakemake prints for it (str.format fields: wildcards).
    message: str
    # It waits for its profile's database template (a cell's `database` input).
    database: bool = True
    # It runs before every cell (a priority above theirs): its load would disturb a timed cell beside it.
    before_cells: bool = True
    # A directory of its raw outputs beside its record (the rule's output `raw`), its path pattern.
    raw: str | None = None
    # Its rule's name where not the lens's (the http lens's probes: conformance).
    rule: str | None = None


@dataclass(frozen=True)
class TableJob:
    """A lens's table job, which the core wires (workflow/rules/lenses.smk): a local rule reading
    every record its measuring jobs wrote, run through the one shim."""

    # What it runs, "module:function", called (config, records, outputs) with its records' paths
    # and its outputs' paths by name; its log is the job's stderr.
    entry: str
    # Its outputs by name, each a file below the results directory ("table": "front.csv").
    outputs: Mapping[str, str]
    # Of those, the ones that are directories, and the ones Snakemake's report does not show (a
    # table file is shown among its Tables).
    directories: tuple[str, ...] = ()
    unshown: tuple[str, ...] = ()
    # Its rule's name where not "<lens>_table"; its log is logs/<rule>.log.
    rule: str | None = None
    # It runs as soon as its records are made, before any cell still waiting (a first answer reads it).
    early: bool = False


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
    # Its section from its tables (present ones, by file name), or None where nothing to show:
    # the core writes the page's part, answers.md's and the console's lines from it.
    section: Callable[[Mapping[str, Path], Inputs], Section | None] | None = None
    # The profile key that asks for it (`front: {...}`), where a profile does; None: every run.
    profile_key: str | None = None
    # Its jobs run before a profile's timed rounds and count towards its measuring budget.
    before_rounds: bool = False
    # Which of its jobs' records a profile's rounds wait for (config, matrix, profile); None:
    # those below <its record folder>/<profile>/ (the work lens's). The http lens's probes of a
    # server stand for every profile that runs it alike.
    waited_for: Callable[[Mapping, object, str], list[str]] | None = None
    # The checks it offers to releases and bisect (its figures a release is shown, or judged, on).
    checks: tuple[Check, ...] = ()
    # A panel it adds to the forest of comparisons (the page's chart of every interval).
    forest: ForestPanel | None = None
    # Whether a profile (as written) asks for it, where its profile_key does not say (releases).
    asks: Callable[[Mapping], bool] | None = None
    # The jobs the core wires for it (workflow/rules/lenses.smk); its rules.smk holds only its own.
    measure_job: MeasureJob | None = None
    table_job: TableJob | None = None
    # Its settings' typed class (its folder's settings.py, a frozen plan.shapes.LensSettings),
    # parsed once in plan from the profile's validated settings (its folder's
    # settings.schema.yaml) into Profile.lens_settings; None: they stay as validated.
    settings: type | None = None
    # Whether its settings shape the timed cells' measurement: they enter each cell's conditions
    # digest, so a change to them measures the cells again (Profile.measuring_conditions).
    conditions: bool = False
    # What bisect reads of it, where it is the lens that judges a release against the one before.
    bisection: Bisection | None = None
    # What compare reads of it, where it is the lens that compares two runs on a figure it counts.
    between_runs: RunComparison | None = None
    # The words of its own it writes (kinds, metrics, outcomes, statuses), checked against every other's.
    words: Words = Words()
    # What it declares about a deployment (its findings.py), read by the deploy answer.
    rulings: Rulings | None = None

    def asked_by(self, profile: Mapping) -> bool:
        """Whether a profile (as written) asks for this lens: its key set, or the lens's own test."""
        if self.asks is not None:
            return self.asks(profile)
        return bool(self.profile_key and profile.get(self.profile_key))

    def before_rounds_of(self, config: Mapping, matrix, profile: str) -> list[str]:
        """Its jobs' records (below the results directory) that run before ``profile``'s rounds
        and count against its measuring budget: none unless ``before_rounds``."""
        if not self.before_rounds:
            return []
        if self.waited_for is not None:
            return self.waited_for(config, matrix, profile)
        return [job for job in self.jobs(config, matrix) if Path(job).parts[1] == profile]

    @property
    def rules(self) -> Path:
        return self.folder / "rules.smk"

    @property
    def measure_rule(self) -> str | None:
        """Its measuring job's rule name, where the core wires one."""
        if self.measure_job is None:
            return None
        return self.measure_job.rule or self.name

    @property
    def table_rule(self) -> str | None:
        """Its table job's rule name, where the core wires one."""
        if self.table_job is None:
            return None
        return self.table_job.rule or f"{self.name}_table"


def section_of(lens: Lens, tables: Iterable[Path | str], inputs: Inputs) -> Section | None:
    """A lens's section from the tables it made this run (None where it made none or has none)."""
    present = {Path(path).name: Path(path) for path in tables}
    if lens.section is None or not present:
        return None
    section = lens.section(present, inputs)
    return None if section is None else dataclasses.replace(section, lens=lens.name, place=lens.place)


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


def entry_point(entry: str) -> Callable:
    """The function a lens's job names, "module:function", imported when its job runs."""
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)
