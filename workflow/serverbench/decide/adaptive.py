"""Rounds set by the comparisons: after a profile's first ``min_repeats`` rounds,
one whole round more at a time (every cell of the profile, in its own random
order) until each of its declared comparisons is settled — decided (*faster*,
*slower*, *equivalent*) or sharp enough that it could have detected a ratio of
``1 + precision`` — or ``max_repeats`` rounds are reached, or one more round would
take the profile's measuring past its ``measuring_budget``.

The decision follows the comparisons, not one cell's spread: a noisy cell
whose comparison is already decided needs no more rounds, and a steady pair
whose difference sits near the margin does. Each decision is a file (the
workflow's ``precision`` checkpoint), so the DAG shows why a run got more
rounds. The Holm family here is the profile's own comparisons so far; the
run's verdicts (``decide.verdicts``) are drawn again over the whole run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from serverbench.decide.inference import EQUIVALENT, FASTER, SLOWER, UNDETERMINED
from serverbench.decide.pairs import LATENCY_KINDS
from serverbench.decide.verdicts import BEST_DEPLOYMENT, BEST_OF_LANGUAGE, NOT_TESTED, comparison_table
from serverbench.plan.config import effective_profile
from serverbench.plan.tools import closed_loop_tools
from serverbench.tables.runs import load_runs
from serverbench.tables.series import window_series
from serverbench.tables.summary import summarise

SETTLED = (FASTER, SLOWER, EQUIVALENT)
SHOWN = ["kind", "workload", "tool", "concurrency", "a", "b", "n_a", "outcome", "ratio", "detectable_ratio"]


def comparison_state(row: pd.Series, precision: float) -> str:
    """Where one comparison stands: decided, sharp enough, open (more rounds can
    help), or beyond rounds (not comparable: more of the same will not change it)."""
    if row["outcome"] in SETTLED:
        return "decided"
    if row["outcome"] == UNDETERMINED and row["detectable_ratio"] <= 1 + precision:
        return "sharp enough"
    if row["outcome"] in (UNDETERMINED, NOT_TESTED):
        return "open"
    return "beyond rounds"


def measuring_so_far(cell_paths: list, before_paths: list, rounds: int) -> tuple[float, float]:
    """Seconds the profile's measuring has taken (from the first of its work, conformance
    and cell jobs to its last cell, as their records time them) and one round's mean."""
    cells = [json.loads(Path(path).read_text()).get("timing") or {} for path in cell_paths]
    starts = [t["job_start"] for t in cells if t.get("job_start")]
    ends = [t["job_end"] for t in cells if t.get("job_end")]
    if not starts or not ends:
        return 0.0, 0.0
    before = [json.loads(Path(path).read_text()).get("started_at") for path in before_paths]
    first = min([*starts, *(start for start in before if start)])
    return max(ends) - first, (max(ends) - min(starts)) / rounds


def needs_another_round(record_paths: list, config: dict, profile_name: str, rounds: int, before_paths=()) -> dict:
    """Whether a profile whose first ``rounds`` rounds are ``record_paths`` needs one more
    (``before_paths``: its work and conformance records, whose jobs ran before its rounds)."""
    profile = effective_profile(config, profile_name)
    table = _open_comparisons(record_paths, config, profile.precision)
    open_ones = int((table["state"] == "open").sum())
    limit = profile.max_repeats or profile.repeats
    more = open_ones > 0 and rounds < limit
    measured, per_round = measuring_so_far(record_paths, list(before_paths), rounds)
    over_budget = bool(profile.measuring_budget) and measured + per_round > profile.measuring_budget
    if table.empty:
        why = "no declared comparison to sharpen"
    elif not open_ones:
        why = f"every comparison is decided or could have detected {1 + profile.precision:.3g}×"
    else:
        why = f"{open_ones} comparison(s) still open" + ("" if more else f" at max_repeats ({limit})")
    if more and over_budget:
        more = False
        why += (
            f"; one more round (about {per_round:.0f} s) would take the measuring from {measured:.0f} s"
            f" past its budget ({profile.measuring_budget:.0f} s)"
        )
    shown = table[[*SHOWN, "state"]].astype(object).where(table[[*SHOWN, "state"]].notna(), None)
    return {
        "profile": profile_name,
        "rounds": rounds,
        "precision": profile.precision,
        "max_repeats": limit,
        "measuring_s": round(measured, 1),
        "round_s": round(per_round, 1),
        "measuring_budget": profile.measuring_budget,
        "comparisons": [_finite(row) for row in shown.to_dict("records")],
        "open": open_ones,
        "more": more,
        "why": why,
    }


def _open_comparisons(record_paths: list, config: dict, precision: float) -> pd.DataFrame:
    """The declared comparisons of the rounds so far, each with its state."""
    runs = load_runs(record_paths)
    spec = config["comparisons"]
    summary = summarise(runs, config["flags"], spec["confidence"], config["seed"], closed_loop_tools(config))
    table = comparison_table(runs, summary, config, windows=window_series(record_paths))
    table = table[~table["kind"].isin([*LATENCY_KINDS, BEST_OF_LANGUAGE, BEST_DEPLOYMENT])].copy()
    table["state"] = [comparison_state(row, precision) for _, row in table.iterrows()]
    return table


def _finite(row: dict) -> dict:
    """JSON has no infinity: an unbounded detectable ratio is written as null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
