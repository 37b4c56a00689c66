"""A server in operation, judged between servers: every declared pair (decide.pairs:
one server in two languages, a twin against its original, a variant, a named pair)
compared check by check, on the figures each life or reload gave (tables.operations
.samples), with the same outcomes whatever the check: *lower*, *higher*,
*equivalent* (within the check's margin) or *undetermined*.

A check of seconds or megabytes is read as a ratio a/b of the two medians; the
failed requests of a reload, mostly none, as a difference of means (a ratio of
zeros says nothing), in requests per reload. The interval is a percentile
bootstrap over each side's own figures (SciPy), seeded so a table repeats; a
side with fewer than ``MIN_FIGURES`` figures is undetermined, with why. Lower is
better for every check here, so the outcome names the direction, not a winner.
"""

from __future__ import annotations

import pandas as pd

from serverbench.decide import bootstrap
from serverbench.decide.bootstrap import CheckRule
from serverbench.decide.pairs import declared_pairs
from serverbench.lenses.operations.record import OperationsMetric
from serverbench.lenses.operations.table import samples

LEVEL = bootstrap.LEVEL
# Fewer figures a side decide nothing: a percentile bootstrap of three lives gives an interval
# far narrower than its level (the operations profile's rounds: 5 lives, 15 reloads a side).
MIN_FIGURES = bootstrap.MIN_FIGURES
SEED = 20261127
RATIO, DIFFERENCE = bootstrap.Read.RATIO.value, bootstrap.Read.DIFFERENCE.value

# The checks judged, each by its rule; memory per worker is a slope over lives, with its own
# interval, not compared. (The lens's ``CHECKS`` are those it offers to releases and bisect.)
JUDGED = {
    "cold_start_s": CheckRule("s", RATIO, 0.10),
    "idle_uss_mb": CheckRule("MB", RATIO, 0.05),
    "loaded_uss_mb": CheckRule("MB", RATIO, 0.05),
    "reload_longest_gap_s": CheckRule("s", RATIO, 0.10),
    "reload_failed": CheckRule("requests per reload", DIFFERENCE, 0.5),
}


def judge(kind: str, profile: str, name: str, a: tuple[str, list], b: tuple[str, list]) -> bootstrap.CheckComparison:
    """One check of a pair: ``a`` and ``b`` are (server, its figures)."""
    return bootstrap.judge(
        JUDGED[name],
        name,
        a,
        b,
        SEED,
        MIN_FIGURES,
        kind=kind,
        metric=OperationsMetric.OPERATIONS,
        condition=(("profile", profile),),
    )


def operations_comparisons(results: list[dict], config: dict) -> list[bootstrap.CheckComparison]:
    """Every declared pair of each profile's servers, on every check both sides measured."""
    found = []
    by_profile: dict[str, dict[str, dict]] = {}
    for result in results:
        by_profile.setdefault(result["profile"], {})[result["server"]] = samples(result)
    for profile, servers in sorted(by_profile.items()):
        for kind, a, b in declared_pairs(config, sorted(servers)):
            for name in JUDGED:
                if servers[a].get(name) is not None and servers[b].get(name) is not None:
                    found.append(judge(kind, profile, name, (a, servers[a][name]), (b, servers[b][name])))
    return found


def operations_verdict_table(results: list[dict], config: dict) -> pd.DataFrame:
    """operations_verdicts.csv: a row per (profile, check, pair); ``estimate`` is a/b or a-b
    as ``scale`` says."""
    rows = [comparison.as_row() for comparison in operations_comparisons(results, config)]
    for row in rows:
        row["estimate"] = row.pop("ratio")
    columns = ["profile", *bootstrap.CHECK_VERDICT_COLUMNS]
    return pd.DataFrame(rows, columns=columns)
