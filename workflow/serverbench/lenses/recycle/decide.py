"""Recycling judged within each server, through the one rule (``decide.margins``): each
explicit setting against the server's own on the requests it fails, and a setting with jitter
against the same limit without on the workers leaving at once, per kind of client. The figures
are the run's seconds (failures in each second of load) and its restarts (how many left at
once); each comparison is a percentile bootstrap interval (``decide.bootstrap``, seeded so a
table repeats) read against the check's margin: *higher*, *lower*, *equivalent* or
*undetermined*, as the operations lens reads its checks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd

from serverbench.decide import bootstrap, margins
from serverbench.decide.judgement import HIGHER, LOWER, UNDETERMINED
from serverbench.lenses.recycle.record import Setting
from serverbench.record.vocabulary import Kind, Metric, Status

SEED = 20261129
RATIO, DIFFERENCE = bootstrap.Read.RATIO.value, bootstrap.Read.DIFFERENCE.value


@dataclass(frozen=True)
class Check:
    unit: str
    scale: str
    margin: float  # a share of b (ratio) or units (difference)
    source: str  # "seconds": a figure per second of load; "restarts": a figure per restart
    field: str


CHECKS = {
    # A failed request every ten seconds is the least told apart from none: a restart that loses any
    # request loses it in a burst, and a run's seconds without one narrow nothing.
    "failed_per_s": Check("failed requests per second", DIFFERENCE, 0.1, "seconds", "failed"),
    "restarts_at_once": Check("workers leaving within the window", DIFFERENCE, 0.5, "restarts", "restarts_in_window"),
}
# Against the server's own: the requests a limit loses; jitter against none: whether it spreads the
# restarts. Answers per second and p99 are two lives' figures, and between two lives the closed loop's
# rate moves with the kernel's placement (uWSGI at 1000, never restarting, read 1.26× its own in one
# run: docs/recycle.md): shown, not judged.
AGAINST_OWN = ("failed_per_s",)
AGAINST_NO_JITTER = ("restarts_at_once",)


def figures(run: dict, check: Check) -> list[float]:
    rows = run.get(check.source) or []
    return [float(row[check.field]) for row in rows if row.get(check.field) is not None]


def judge(condition: tuple, name: str, a: tuple[str, list], b: tuple[str, list]) -> bootstrap.CheckComparison:
    """One check: ``a`` and ``b`` are (label, its figures)."""
    check = CHECKS[name]
    (label_a, values_a), (label_b, values_b) = a, b
    made = {
        "kind": Kind.SETTING,
        "a": label_a,
        "b": label_b,
        "metric": Metric.RECYCLING,
        "margin": check.margin,
        "condition": (*condition, ("check", name)),
        "check": name,
        "unit": check.unit,
        "scale": check.scale,
        "n_a": len(values_a),
        "n_b": len(values_b),
        "level": bootstrap.LEVEL,
    }
    found = bootstrap.interval(values_a, values_b, bootstrap.Read(check.scale), SEED)
    if found.reason is not None:
        return bootstrap.CheckComparison(
            outcome=UNDETERMINED, a_value=found.a_value, b_value=found.b_value, reasons=(found.reason,), **made
        )
    scale = margins.Scale.DIFFERENCE if check.scale == DIFFERENCE else margins.Scale.RATIO
    side = margins.side(found.low, found.high, check.margin, margins.Question.IN_ONE_RUN, scale)
    return bootstrap.CheckComparison(
        outcome=margins.outcome(side, above=HIGHER, below=LOWER),
        estimate=found.estimate,
        a_value=found.a_value,
        b_value=found.b_value,
        low=found.low,
        high=found.high,
        **made,
    )


def comparisons(result: dict) -> list[bootstrap.CheckComparison]:
    """One server's record: each setting against its own, each jittered one against none."""
    runs = {
        (Setting(**run["setting"]).label, run["client"], run.get("upstream") or ""): run
        for run in result["runs"]
        if run.get("declared", True) and run["status"] == Status.OK
    }
    found = []
    for (label, client, upstream), run in sorted(runs.items()):
        condition = (("profile", result["profile"]), ("server", result["server"]), ("client", client))
        if upstream:  # behind a front: over kept upstream connections or one per request
            condition = (*condition, ("upstream", upstream))
        setting = Setting(**run["setting"])
        pairs = []
        if label != "own" and ("own", client, upstream) in runs:
            pairs += [(name, ("own", client, upstream)) for name in AGAINST_OWN]
        unjittered = (dataclasses.replace(setting, jitter=0).label, client, upstream)
        if setting.jitter and unjittered in runs:
            pairs += [(name, unjittered) for name in AGAINST_NO_JITTER]
        for name, other in pairs:
            check = CHECKS[name]
            a = (f"{result['server']} at {label}", figures(run, check))
            b = (f"{result['server']} at {other[0]}", figures(runs[other], check))
            found.append(judge(condition, name, a, b))
    return found


VERDICT_COLUMNS = [
    "profile",
    "server",
    "client",
    "upstream",
    "check",
    "kind",
    "a",
    "b",
    "metric",
    "unit",
    "scale",
    "a_value",
    "b_value",
    "estimate",
    "ci_low",
    "ci_high",
    "level",
    "margin",
    "outcome",
    "n_a",
    "n_b",
    "reason_codes",
    "why",
]


def recycle_verdict_table(results: list[dict]) -> pd.DataFrame:
    """recycle_verdicts.csv: a row per (profile, server, client, check, setting against another)."""
    rows = [comparison.as_row() for result in results for comparison in comparisons(result)]
    for row in rows:
        row["estimate"] = row.pop("ratio")
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
