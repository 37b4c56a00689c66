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
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from serverbench.decide import bootstrap
from serverbench.decide.bootstrap import CheckRule
from serverbench.lenses.recycle.record import RecycleKind, RecycleMetric, RecycleResult, Run, Setting
from serverbench.record.vocabulary import Status

SEED = 20261129
RATIO, DIFFERENCE = bootstrap.Read.RATIO.value, bootstrap.Read.DIFFERENCE.value


@dataclass(frozen=True)
class RecycleRule(CheckRule):
    """A check's rule (``bootstrap.CheckRule``) and its figures in a run: one per second of load,
    or one per restart."""

    figures_of: Callable[[Run], list]


# The checks judged, each by its rule (the lens's ``CHECKS`` are those it offers to releases and bisect).
JUDGED = {
    # A failed request every ten seconds is the least told apart from none: a restart that loses any
    # request loses it in a burst, and a run's seconds without one narrow nothing.
    "failed_per_s": RecycleRule(
        "failed requests per second", DIFFERENCE, 0.1, lambda run: [second.get("failed") for second in run.seconds]
    ),
    "restarts_at_once": RecycleRule(
        "workers leaving within the window",
        DIFFERENCE,
        0.5,
        lambda run: [restart.restarts_in_window for restart in run.restarts],
    ),
}
# Against the server's own: the requests a limit loses; jitter against none: whether it spreads the
# restarts. Answers per second and p99 are two lives' figures, and between two lives the closed loop's
# rate moves with the kernel's placement (uWSGI at 1000, never restarting, read 1.26× its own in one
# run: docs/recycle.md): shown, not judged.
AGAINST_OWN = ("failed_per_s",)
AGAINST_NO_JITTER = ("restarts_at_once",)
OWN = Setting()  # the server's own recycling: every declared setting sets a limit


def figures(run: Run, rule: RecycleRule) -> list[float]:
    return [float(value) for value in rule.figures_of(run) if value is not None]


def judge(condition: tuple, name: str, a: tuple[str, list], b: tuple[str, list]) -> bootstrap.CheckComparison:
    """One check: ``a`` and ``b`` are (label, its figures)."""
    return bootstrap.judge(
        JUDGED[name], name, a, b, SEED, kind=RecycleKind.SETTING, metric=RecycleMetric.RECYCLING, condition=condition
    )


def comparisons(result: RecycleResult) -> list[bootstrap.CheckComparison]:
    """One server's record: each setting against its own, each jittered one against none."""
    runs = {
        (run.setting, run.client, run.upstream or ""): run
        for run in result.runs
        if run.declared and run.status == Status.OK
    }
    found = []
    # In the order people read the settings (their labels), then client and upstream.
    for (setting, client, upstream), run in sorted(runs.items(), key=lambda item: (item[0][0].label, *item[0][1:])):
        condition = (("profile", result.profile), ("server", result.server), ("client", client))
        if upstream:  # behind a front: over kept upstream connections or one per request
            condition = (*condition, ("upstream", upstream))
        pairs = []
        if not setting.is_own and (OWN, client, upstream) in runs:
            pairs += [(name, (OWN, client, upstream)) for name in AGAINST_OWN]
        unjittered = (dataclasses.replace(setting, jitter=0), client, upstream)
        if setting.jitter and unjittered in runs:
            pairs += [(name, unjittered) for name in AGAINST_NO_JITTER]
        for name, other in pairs:
            rule = JUDGED[name]
            a = (f"{result.server} at {setting.label}", figures(run, rule))
            b = (f"{result.server} at {other[0].label}", figures(runs[other], rule))
            found.append(judge(condition, name, a, b))
    return found


VERDICT_COLUMNS = ["profile", "server", "client", "upstream", *bootstrap.CHECK_VERDICT_COLUMNS]


def recycle_verdict_table(results: list[RecycleResult]) -> pd.DataFrame:
    """recycle_verdicts.csv: a row per (profile, server, client, check, setting against another)."""
    rows = [comparison.as_row() for result in results for comparison in comparisons(result)]
    for row in rows:
        row["estimate"] = row.pop("ratio")
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
