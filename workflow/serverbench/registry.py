"""The lenses of a run: the built-in ones, in the order the page shows them, and any a config
adds by its importable package's name (``lenses``). The workflow, the page, answers.md and the
console loop over these; nothing below this module names a lens."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from serverbench.lens import (
    Check,
    Choice,
    ForestPanel,
    Inputs,
    Lens,
    RunFindings,
    Section,
    malformed_words,
    section_of,
)
from serverbench.record.vocabulary import Kind, Metric, Outcome, Status
from serverbench.report.section import section_console

if TYPE_CHECKING:  # pandas only where a panel's table is read: `serverbench --help` reads the lenses' checks
    import pandas as pd

# The registry: a lens is a package of serverbench.lenses with LENS in its __init__.
BUILT_IN = (
    # First: its sentences follow the timed answers, before every other lens's console lines.
    "serverbench.lenses.http",
    # Before advise: the deployment decided on every lens leads the lenses it reads.
    "serverbench.lenses.deploy",
    "serverbench.lenses.advise",
    "serverbench.lenses.front",
    "serverbench.lenses.idlepool",  # after the front: which balancer idle timeout is safe
    "serverbench.lenses.releases",
    "serverbench.lenses.operations",
    "serverbench.lenses.recycle",
    "serverbench.lenses.shutdown",
    "serverbench.lenses.overload",
    "serverbench.lenses.work",
)


def lenses(config: Mapping | None = None) -> list[Lens]:
    """Every lens the run knows: the built-in ones, then those the config's ``lenses`` names."""
    names = [*BUILT_IN, *((config or {}).get("lenses") or [])]
    found = [importlib.import_module(name).LENS for name in names]
    seen: set[str] = set()
    for lens in found:
        if lens.name in seen:
            raise ValueError(f"two lenses are called {lens.name!r}")
        seen.add(lens.name)
    check_words(found)
    return found


def wired_job(config: Mapping, rule: str) -> tuple[Lens, str]:
    """The lens whose job the core wired as ``rule`` (workflow/rules/lenses.smk), and its kind:
    "measure" (its measuring job) or "table" (its table job)."""
    for lens in lenses(config):
        if lens.measure_job is not None and rule == lens.measure_rule:
            return lens, "measure"
        if lens.table_job is not None and rule == lens.table_rule:
            return lens, "table"
    raise LookupError(f"no lens's job is wired as rule {rule!r}")


# The core's words in each field a lens may add to (``lens.Words``).
CORE_WORDS = {"kinds": Kind, "metrics": Metric, "outcomes": Outcome, "statuses": Status}


def check_words(found: Iterable[Lens]) -> None:
    """Refuse a lens's word that is malformed, or that the core or another lens has in the same
    field: a table read back could not tell whose word it holds."""
    owners = {(field, word.value): "the core vocabulary" for field, words in CORE_WORDS.items() for word in words}
    for lens in found:
        malformed = malformed_words(lens.words)
        if malformed:
            raise ValueError(
                f"the {lens.name!r} lens declares malformed words ({', '.join(malformed)}): "
                "a word is lower case, digits and single spaces, a / . - or ± inside"
            )
        for field, words in lens.words.by_field().items():
            for word in words:
                owner = owners.setdefault((field, word.value), f"the {lens.name!r} lens")
                if owner != f"the {lens.name!r} lens":
                    raise ValueError(
                        f"the {lens.name!r} lens declares {word.value!r} among its {field}: a word of {owner} already"
                    )


def tables_of(lens: Lens, paths: Iterable[Path | str]) -> list[Path]:
    """Those of ``paths`` that are this lens's tables (by file name)."""
    return [Path(path) for path in paths if Path(path).name in lens.tables]


def sections(config: Mapping, tables: Iterable[Path | str], language_titles: Mapping[str, str]) -> list[Section]:
    """Every lens's section from the tables the run made, in the registry's order."""
    found = lenses(config)
    inputs = Inputs(config, language_titles or {}, offered_checks(found))
    paths = list(tables)
    made = (section_of(lens, tables_of(lens, paths), inputs) for lens in found)
    return [section for section in made if section is not None]


def offered_checks(found: Iterable[Lens]) -> tuple[Check, ...]:
    """Every check the lenses offer to releases and bisect, in the registry's order."""
    return tuple(check for lens in found for check in lens.checks)


def forest_panels(config: Mapping, tables: Iterable[Path | str]) -> list[tuple[ForestPanel, pd.DataFrame]]:
    """The forest's panels the lenses add, each with its verdict table where the run made it."""
    import pandas as pd

    made = {Path(path).name: Path(path) for path in tables}
    found = [lens.forest for lens in lenses(config) if lens.forest is not None and lens.forest.table in made]
    return [(panel, pd.read_csv(made[panel.table])) for panel in found]


def console_text(config: Mapping, results: Path | str, name: str) -> str:
    """One lens's console lines from its tables in the results directory (empty where it has none)."""
    found = lenses(config)
    lens = next(lens for lens in found if lens.name == name)
    made = [Path(results) / table for table in lens.tables if (Path(results) / table).exists()]
    section = section_of(lens, made, Inputs(config, {}, offered_checks(found)))
    return section_console(section) if section is not None else ""


def print_consoles(config: Mapping, results: Path | str) -> None:
    """Every lens's lines at the end of a run."""
    for lens in lenses(config):
        print(console_text(config, results, lens.name), end="")


def ruling_lenses(config: Mapping) -> list[str]:
    """The lenses that declare findings about a deployment (``Lens.rulings``), by name."""
    return [lens.name for lens in lenses(config) if lens.rulings is not None]


def profile_running(config: Mapping, lens: Lens) -> str:
    """The profile a user runs for this lens: the first of the config's that asks for it."""
    for name, profile in (config.get("profiles") or {}).items():
        if isinstance(profile, Mapping) and lens.asked_by(profile):
            return name
    return lens.profile_key or lens.name


def findings(config: Mapping, results: Path | str) -> RunFindings:
    """Every lens's findings about a deployment from its tables in ``results`` (``Lens.rulings``),
    with the candidates of the lens that ranks them, who speaks to each choice, and which ran."""
    results = Path(results)
    declaring = [lens for lens in lenses(config) if lens.rulings is not None]
    ran = frozenset(lens.name for lens in declaring if any((results / table).exists() for table in lens.tables))
    found = tuple(finding for lens in declaring if lens.name in ran for finding in lens.rulings.read(results, config))
    candidates = tuple(
        candidate
        for lens in declaring
        if lens.name in ran and lens.rulings.candidates is not None
        for candidate in lens.rulings.candidates(results, config)
    )
    speakers = {
        choice: tuple(
            (lens.name, profile_running(config, lens)) for lens in declaring if choice in lens.rulings.choices
        )
        for choice in Choice
    }
    return RunFindings(found, candidates, speakers, ran)
