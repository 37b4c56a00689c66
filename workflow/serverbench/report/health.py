"""What to look at before trusting a run: the cells that failed or were skipped and why, and the
controls that misbehaved (an A/A pair told apart, where nothing differs; a planted variant not
told from its original, where something does). One block at the end of a run (``print_health``);
with ``strict: true`` in the config such a run ends with a non-zero exit status, as k6's
thresholds set its exit (``StrictFailure``, raised from the workflow's ``onsuccess``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pandas as pd

from serverbench.plan.catalogue import server_entry
from serverbench.record.vocabulary import Kind, Metric, Outcome, Status

# A control's outcome that says it misbehaved: an A/A pair is never faster or slower.
AA_WRONG = {Outcome.FASTER, Outcome.SLOWER}
# The outcome a planted variant (the catalogue's ``planted``) must come out with, by the metric it
# was judged on. Work per request is counted, so the work lens sees a planted 5% in every run; a
# run's speed may be too coarse to tell it (undetermined: said, never a trouble), but may never
# call it the other way or equivalent.
PLANTED_AS = {
    Metric.SPEED: {Outcome.SLOWER: Outcome.SLOWER, Outcome.FASTER: Outcome.FASTER},
    Metric.WORK: {Outcome.SLOWER: Outcome.MORE_WORK, Outcome.FASTER: Outcome.LESS_WORK},
}


class Trouble(StrEnum):
    """Why a run asks to be looked at."""

    FAILED = "failed"  # a cell measured and failed, or a harness error
    SKIPPED = "skipped"  # a cell that could not be measured here
    AA_DECIDED = "A/A control told apart"  # the same server twice came out faster or slower
    VARIANT_NOT_SEEN = "planted variant not seen"  # it did not come out as planted


@dataclass(frozen=True)
class Problem:
    trouble: Trouble
    subject: str  # the cell or the pair, as a reader names it
    why: str


class StrictFailure(Exception):
    """A run with ``strict: true`` that failed, skipped or had a control misbehave."""


def _cells(summary: pd.DataFrame) -> list[Problem]:
    found = []
    for row in summary.itertuples(index=False):
        if row.status == Status.OK:
            continue
        subject = f"{row.server} ({row.profile}, {row.workload}, {row.tool}, c={row.concurrency})"
        trouble = Trouble.SKIPPED if row.status == Status.SKIPPED else Trouble.FAILED
        found.append(Problem(trouble, subject, str(row.reason)))
    return found


def _subject(row: dict) -> str:
    where = f"c={int(row['concurrency'])}" if pd.notna(row.get("concurrency")) else row.get("workload")
    return f"{row['a']} against {row['b']} ({row.get('profile')}, {where}, on {row['metric']})"


def _planted(row: dict, config: dict) -> Outcome | None:
    """The outcome ``row``'s comparison must have, where it is a planted variant's (else None)."""
    if row["kind"] != Kind.VARIANT or row["a"] not in config["catalogue"]:
        return None
    planted = server_entry(config, row["a"]).planted
    return PLANTED_AS.get(row.get("metric"), {}).get(planted) if planted else None


def _controls(verdicts: pd.DataFrame, config: dict) -> list[Problem]:
    found = []
    for row in verdicts.to_dict("records"):
        expected = _planted(row, config)
        if row["kind"] == Kind.AA and row["outcome"] in AA_WRONG:
            found.append(Problem(Trouble.AA_DECIDED, _subject(row), f"{row['outcome']} (ratio {row['ratio']:.3f})"))
        elif expected is None or row["outcome"] == expected:
            continue
        elif row["outcome"] == Outcome.UNDETERMINED and row["metric"] == Metric.SPEED:
            continue  # the run's resolution, said by control_notes
        else:
            found.append(Problem(Trouble.VARIANT_NOT_SEEN, _subject(row), f"{row['outcome']}, planted {expected}"))
    return found


def control_notes(verdicts: pd.DataFrame, config: dict) -> list[str]:
    """What the controls show of the run's resolution, in words: a planted variant its speed
    could not tell (with the smallest difference it could have told), and where it was seen."""
    notes = []
    for row in verdicts.to_dict("records"):
        expected = _planted(row, config)
        if expected is None:
            continue
        if row["outcome"] == expected:
            notes.append(f"{_subject(row)}: {expected} ({row['ratio']:.3f}×), as planted")
        elif row["outcome"] == Outcome.UNDETERMINED and row["metric"] == Metric.SPEED:
            could = row.get("detectable_ratio")
            told = f"; it could have told {could:.3f}× apart" if pd.notna(could) else ""
            notes.append(f"{_subject(row)}: undetermined — too small for this run's speed to tell{told}")
    return notes


def _verdicts(results: Path, lens_verdicts: Iterable[Path | str]) -> pd.DataFrame:
    """The run's verdicts and the lenses' (work_verdicts.csv: the planted variant on work), where made."""
    # Here, not at the top: the workflow imports this module when it is parsed, which loads no
    # statistics library (tests/test_layers.py); the decide stage's reader does.
    from serverbench.decide.verdicts import read_verdicts

    paths = [results / "verdicts.csv", *map(Path, lens_verdicts)]
    tables = [read_verdicts(path) for path in paths if path.exists() and path.stat().st_size]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def run_problems(config: dict, results: Path | str, lens_verdicts: Iterable[Path | str] = ()) -> list[Problem]:
    """Every problem of the run in ``results``, read from its summary and verdicts where made."""
    return _problems(config, Path(results), _verdicts(Path(results), lens_verdicts))


def _problems(config: dict, results: Path, verdicts: pd.DataFrame) -> list[Problem]:
    found: list[Problem] = []
    summary = results / "summary.csv"
    if summary.exists() and summary.stat().st_size:
        found += _cells(pd.read_csv(summary))
    if not verdicts.empty:
        found += _controls(verdicts, config)
    return found


def print_health(config: dict, results: Path | str, lens_verdicts: Iterable[Path | str] = ()) -> None:
    """The block at the end of a run (``lens_verdicts``: the lenses' verdict tables, where a planted
    variant is judged too); under ``strict`` a problem raises ``StrictFailure``."""
    strict = bool(config.get("strict"))
    verdicts = _verdicts(Path(results), lens_verdicts)  # read once: the problems and the notes
    problems = _problems(config, Path(results), verdicts)
    notes = control_notes(verdicts, config) if not verdicts.empty else []
    if notes:
        print("\nserverbench: the planted variants (the run's check on itself):")
        print("\n".join(f"  - {note}" for note in notes))
    if not problems:
        print("\nserverbench: every cell measured, every control as expected.")
        return
    print(f"\nserverbench: {len(problems)} thing(s) to look at before trusting this run:")
    counts = Counter(p.trouble for p in problems)
    for trouble in (t for t in Trouble if counts[t]):
        print(f"  {trouble} ({counts[trouble]}):")
        print("\n".join(f"    - {p.subject}: {p.why}" for p in problems if p.trouble is trouble))
    if strict:
        said = ", ".join(f"{counts[t]} {t}" for t in Trouble if counts[t])
        raise StrictFailure(f"strict: {said} (config strict=True sets the exit status)")
