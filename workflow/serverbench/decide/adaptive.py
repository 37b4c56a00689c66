"""Rounds set by the comparisons: after a profile's first ``min_repeats`` rounds,
one whole round more at a time (every cell of the profile, in its own random
order) until each of its declared comparisons is settled — decided (*faster*,
*slower*, *equivalent*) or sharp enough that it could have detected a ratio of
``1 + precision`` — or ``max_repeats`` rounds are reached.

The decision follows the comparisons, not one cell's spread: a noisy cell
whose comparison is already decided needs no more rounds, and a steady pair
whose difference sits near the margin does. Each decision is a file (the
workflow's ``precision`` checkpoint), so the DAG shows why a run got more
rounds. The Holm family here is the profile's own comparisons so far; the
run's verdicts (``decide.verdicts``) are drawn again over the whole run.
"""

from __future__ import annotations

import math

import pandas as pd

from serverbench.decide.inference import EQUIVALENT, FASTER, SLOWER, UNDETERMINED
from serverbench.decide.pairs import LATENCY_KINDS
from serverbench.decide.verdicts import BEST_DEPLOYMENT, BEST_OF_LANGUAGE, NOT_TESTED, verdict_table
from serverbench.plan.config import effective_profile
from serverbench.plan.tools import closed_loop_tools
from serverbench.tables.runs import load_runs
from serverbench.tables.series import window_series
from serverbench.tables.summary import summarise

SETTLED = (FASTER, SLOWER, EQUIVALENT)
SHOWN = ["kind", "workload", "tool", "concurrency", "a", "b", "n_a", "verdict", "ratio", "detectable_ratio"]


def comparison_state(row: pd.Series, precision: float) -> str:
    """Where one comparison stands: decided, sharp enough, open (more rounds can
    help), or beyond rounds (not comparable: more of the same will not change it)."""
    if row["verdict"] in SETTLED:
        return "decided"
    if row["verdict"] == UNDETERMINED and row["detectable_ratio"] <= 1 + precision:
        return "sharp enough"
    if row["verdict"] in (UNDETERMINED, NOT_TESTED):
        return "open"
    return "beyond rounds"


def needs_another_round(record_paths: list, config: dict, profile_name: str, rounds: int) -> dict:
    """Whether a profile whose first ``rounds`` rounds are ``record_paths`` needs one more."""
    profile = effective_profile(config, profile_name)
    runs = load_runs(record_paths)
    spec = config["comparisons"]
    summary = summarise(runs, config["flags"], spec["confidence"], config["seed"], closed_loop_tools(config))
    table = verdict_table(runs, summary, config, windows=window_series(record_paths))
    table = table[~table["kind"].isin([*LATENCY_KINDS, BEST_OF_LANGUAGE, BEST_DEPLOYMENT])].copy()
    table["state"] = [comparison_state(row, profile.precision) for _, row in table.iterrows()]
    open_ones = int((table["state"] == "open").sum())
    limit = profile.max_repeats or profile.repeats
    more = open_ones > 0 and rounds < limit
    if table.empty:
        why = "no declared comparison to sharpen"
    elif not open_ones:
        why = f"every comparison is decided or could have detected {1 + profile.precision:.3g}×"
    else:
        why = f"{open_ones} comparison(s) still open" + ("" if more else f" at max_repeats ({limit})")
    shown = table[[*SHOWN, "state"]].astype(object).where(table[[*SHOWN, "state"]].notna(), None)
    return {
        "profile": profile_name,
        "rounds": rounds,
        "precision": profile.precision,
        "max_repeats": limit,
        "comparisons": [_finite(row) for row in shown.to_dict("records")],
        "open": open_ones,
        "more": more,
        "why": why,
    }


def _finite(row: dict) -> dict:
    """JSON has no infinity: an unbounded detectable ratio is written as null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
