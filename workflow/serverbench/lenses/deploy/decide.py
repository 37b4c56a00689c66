"""The deployment answer: per language, the ranking lens's candidates (advise's: capacity at the
objective, then memory) in their order, each checked against every lens's findings (read through
the registry, ``registry.findings``); the first no lens rules out is recommended, each choice with
the lens and the figure it rests on, and the runner-up it was told apart from or equal to.

A candidate is ruled out by a finding on its server that rules it out, or by the front lens
ruling it out bare where no front it measured holds. deploy.csv holds a row per (language, role,
choice, lens): the recommendation's choices, then the candidates ruled out before it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from serverbench.lens import Candidate, Choice, Finding, Ruling, RunFindings
from serverbench.lenses.deploy.record import Role, Versus

COLUMNS = [
    "language",
    "role",
    "choice",
    "value",
    "ruling",
    "lens",
    "figure",
    "unit",
    "table",
    "row",
    "sentence",
    "runner_up",
    "versus",
    "fails_at",
    "profile",
]
# No front, as the front lens's findings name it.
NO_FRONT = "none"


@dataclass(frozen=True)
class Checked:
    """A candidate against every finding: what rules it out (None: nothing), and its front's findings."""

    candidate: Candidate
    against: Finding | None
    front: tuple[Finding, ...]


def _on(run: RunFindings, candidate: Candidate, choice: Choice) -> list[Finding]:
    return [f for f in run.findings if f.choice is choice and f.about(candidate.language, candidate.server)]


def check(run: RunFindings, candidate: Candidate) -> Checked:
    """The first finding ruling the candidate out, and the front findings that choose its front."""
    server = [f for f in _on(run, candidate, Choice.SERVER) if f.ruling is Ruling.RULES_OUT]
    if server:
        return Checked(candidate, server[0], ())
    fronts = _on(run, candidate, Choice.FRONT)
    bare = [f for f in fronts if f.setting == NO_FRONT]
    if bare and bare[0].ruling is Ruling.RULES_OUT:
        held = [f for f in fronts if f.setting != NO_FRONT and f.ruling is Ruling.STANDS]
        return Checked(candidate, None if held else bare[0], (bare[0], *held[:1]))
    return Checked(candidate, None, tuple(bare[:1]))


def _row(language: str, role: Role, choice: Choice | str, value: str, finding: Finding | None, **more) -> dict:
    evidence = finding.evidence if finding is not None else None
    return {
        "language": language,
        "role": role,
        "choice": choice,
        "value": value,
        "ruling": finding.ruling if finding is not None else Ruling.NOT_MEASURED,
        "lens": finding.lens if finding is not None else None,
        "figure": evidence.value if evidence else None,
        "unit": evidence.unit if evidence else None,
        "table": evidence.table if evidence else None,
        "row": evidence.row if evidence else None,
        "sentence": finding.sentence if finding is not None else None,
        **more,
    }


def _unmeasured(run: RunFindings, language: str, choice: Choice, server: str) -> dict:
    """A choice no finding speaks to: which lens would, and the profile that runs it."""
    speakers = run.speakers.get(choice, ())
    missing = [(lens, profile) for lens, profile in speakers if lens not in run.ran]
    if missing:
        lens, profile = missing[0]
        sentence = f"not measured in this run: the {lens} lens decides it (run profile {profile})"
    elif speakers:
        lens, profile = speakers[0]
        sentence = f"not measured for {server}: the {lens} lens ran without it (run profile {profile} with {server})"
    else:
        lens, profile = None, None
        sentence = f"not measured: no lens declares a finding on the {choice} yet"
    row = _row(language, Role.RECOMMENDED, choice, "", None, profile=profile)
    return {**row, "lens": lens, "sentence": sentence}


def versus(chosen: Candidate, runner_up: Candidate | None) -> Versus:
    """Told apart where the runner-up's capacity interval lies wholly below the chosen one's."""
    if runner_up is None:
        return Versus.NONE_LEFT
    ceiling = runner_up.missed.value if runner_up.missed is not None else None
    return Versus.TOLD_APART if ceiling is not None and chosen.capacity.value > ceiling else Versus.EQUIVALENT


def _server_rows(run: RunFindings, checked: Checked, runner_up: Candidate | None) -> list[dict]:
    chosen = checked.candidate
    held = [f for f in _on(run, chosen, Choice.SERVER) if f.ruling is Ruling.STANDS]
    ranked = next((f for f in held if f.lens == chosen.lens), None)
    more = {
        "runner_up": f"{runner_up.model} {runner_up.setting}" if runner_up else None,
        "versus": versus(chosen, runner_up),
        "fails_at": chosen.missed.value if chosen.missed is not None else None,
    }
    rows = [_row(chosen.language, Role.RECOMMENDED, Choice.SERVER, chosen.model, ranked, **more)]
    rows += [_row(chosen.language, Role.RECOMMENDED, Choice.SERVER, chosen.model, f) for f in held if f is not ranked]
    return rows


def _choice_rows(run: RunFindings, checked: Checked, choice: Choice) -> list[dict]:
    chosen = checked.candidate
    found = checked.front if choice is Choice.FRONT else _on(run, chosen, choice)
    if choice is Choice.WORKERS:
        found = [f for f in found if f.setting == chosen.setting]
    if not found:
        return [_unmeasured(run, chosen.language, choice, chosen.server)]
    # The front's findings: bare first, then the front chosen where bare was ruled out.
    return [_row(chosen.language, Role.RECOMMENDED, choice, finding.setting, finding) for finding in found]


def language_rows(run: RunFindings, language: str) -> list[dict]:
    """One language's answer: its recommendation's choices, then each candidate ruled out."""
    candidates = [c for c in run.candidates if c.language == language]
    checked = [check(run, c) for c in candidates]
    standing = [c for c in checked if c.against is None]
    ruled = []
    for item in checked:
        if item.against is None:
            break
        value = f"{item.candidate.model} {item.candidate.setting}"
        ruled.append(_row(language, Role.RULED_OUT, item.against.choice, value, item.against))
    if not standing:
        nothing = {
            **_row(language, Role.NONE_LEFT, Choice.SERVER, "", None),
            "sentence": "every candidate was ruled out",
        }
        return [nothing, *ruled]
    chosen = standing[0]
    runner_up = standing[1].candidate if len(standing) > 1 else None
    rows = _server_rows(run, chosen, runner_up)
    for choice in Choice:
        if choice is not Choice.SERVER:
            rows.extend(_choice_rows(run, chosen, choice))
    return rows + ruled


def answer(run: RunFindings) -> pd.DataFrame:
    """deploy.csv: every language's answer, languages in the candidates' order."""
    languages = list(dict.fromkeys(c.language for c in run.candidates))
    rows = [row for language in languages for row in language_rows(run, language)]
    if not languages:
        rows = [{**_unmeasured(run, "", Choice.SERVER, "any server"), "role": Role.NONE_LEFT}]
    return pd.DataFrame(rows, columns=COLUMNS)


def write_files(run: RunFindings, table: pd.DataFrame, results: Path, out_dir: Path) -> list[Path]:
    """The recommended server's configuration of each language, as the ranking lens wrote it,
    into ``out_dir/LANGUAGE/``."""
    written = []
    chosen = table[(table["role"] == Role.RECOMMENDED) & (table["choice"] == Choice.SERVER)]
    for language, model in chosen.drop_duplicates("language")[["language", "value"]].itertuples(index=False):
        candidate = next(c for c in run.candidates if c.language == language and c.model == model)
        folder = out_dir / language
        folder.mkdir(parents=True, exist_ok=True)
        for name in candidate.files:
            written.append(Path(shutil.copy2(results / name, folder / Path(name).name)))
    return written


def write_tables(run: RunFindings, results: Path | str, table_csv: Path | str, out_dir: Path | str) -> pd.DataFrame:
    """deploy.csv and results/deploy/ from the run's findings."""
    from serverbench import files

    results, out_dir = Path(results), Path(out_dir)
    table = answer(run)
    files.write_atomic(Path(table_csv), table.to_csv(index=False))
    out_dir.mkdir(parents=True, exist_ok=True)
    write_files(run, table, results, out_dir)
    return table
