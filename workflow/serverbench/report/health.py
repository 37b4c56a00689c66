"""What to look at before trusting a run: the cells that failed or were skipped and why, and the
controls that misbehaved (an A/A pair told apart, where nothing differs; a planted variant not
told from its original, where something does). One block at the end of a run (``print_health``);
with ``strict: true`` in the config such a run ends with a non-zero exit status, as k6's
thresholds set its exit (``StrictFailure``, raised from the workflow's ``onsuccess``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pandas as pd

from serverbench.plan.catalogue import server_entry
from serverbench.record.vocabulary import Kind, Metric, Outcome, Status

# A control's outcome that says it misbehaved: an A/A pair is never faster or slower; a
# variant planted slower (the catalogue's ``planted``) is found so, on speed.
AA_WRONG = {Outcome.FASTER, Outcome.SLOWER}


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


def _controls(verdicts: pd.DataFrame, config: dict) -> list[Problem]:
    found = []
    for row in verdicts.to_dict("records"):
        subject = f"{row['a']} against {row['b']} ({row.get('profile')}, c={row.get('concurrency')})"
        planted = server_entry(config, row["a"]).planted if row["a"] in config["catalogue"] else None
        if row["kind"] == Kind.AA and row["outcome"] in AA_WRONG:
            found.append(Problem(Trouble.AA_DECIDED, subject, f"{row['outcome']} (ratio {row['ratio']:.3f})"))
        elif row["kind"] == Kind.VARIANT and planted and row["metric"] == Metric.SPEED and row["outcome"] != planted:
            found.append(Problem(Trouble.VARIANT_NOT_SEEN, subject, f"{row['outcome']}, planted {planted}"))
    return found


def run_problems(config: dict, results: Path | str) -> list[Problem]:
    """Every problem of the run in ``results``, read from its summary and verdicts where made."""
    # Here, not at the top: the workflow imports this module when it is parsed, which loads no
    # statistics library (tests/test_layers.py); the decide stage's reader does.
    from serverbench.decide.verdicts import read_verdicts

    results = Path(results)
    found: list[Problem] = []
    summary, verdicts = results / "summary.csv", results / "verdicts.csv"
    if summary.exists() and summary.stat().st_size:
        found += _cells(pd.read_csv(summary))
    if verdicts.exists() and verdicts.stat().st_size:
        found += _controls(read_verdicts(verdicts), config)
    return found


def print_health(config: dict, results: Path | str) -> None:
    """The block at the end of a run; under ``strict`` a problem raises ``StrictFailure``."""
    strict = bool(config.get("strict"))
    problems = run_problems(config, results)
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
