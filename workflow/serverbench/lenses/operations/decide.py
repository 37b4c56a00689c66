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

from dataclasses import dataclass

import pandas as pd

from serverbench.decide import bootstrap, margins
from serverbench.decide.judgement import HIGHER, LOWER, OPERATIONS, UNDETERMINED
from serverbench.decide.pairs import declared_pairs
from serverbench.lenses.operations.table import samples

LEVEL = bootstrap.LEVEL
# Fewer figures a side decide nothing: a percentile bootstrap of three lives gives an interval
# far narrower than its level (the operations profile's rounds: 5 lives, 15 reloads a side).
MIN_FIGURES = bootstrap.MIN_FIGURES
SEED = 20261127
RATIO, DIFFERENCE = bootstrap.Read.RATIO.value, bootstrap.Read.DIFFERENCE.value


@dataclass(frozen=True)
class Check:
    """How one check is compared: its unit, the scale it is read on and its margin."""

    unit: str
    scale: str
    margin: float  # a share of b (ratio) or units (difference)


# The checks judged; memory per worker is a slope over lives, with its own interval, not compared.
CHECKS = {
    "cold_start_s": Check("s", RATIO, 0.10),
    "idle_uss_mb": Check("MB", RATIO, 0.05),
    "loaded_uss_mb": Check("MB", RATIO, 0.05),
    "reload_longest_gap_s": Check("s", RATIO, 0.10),
    "reload_failed": Check("requests per reload", DIFFERENCE, 0.5),
}


def _outcome(check: Check, low: float, high: float) -> str:
    """Two servers of one run on a check: its interval against the check's margin."""
    scale = margins.Scale.DIFFERENCE if check.scale == DIFFERENCE else margins.Scale.RATIO
    found = margins.side(low, high, check.margin, margins.Question.IN_ONE_RUN, scale)
    return margins.outcome(found, above=HIGHER, below=LOWER)


def judge(kind: str, profile: str, name: str, a: tuple[str, list], b: tuple[str, list]) -> bootstrap.CheckComparison:
    """One check of a pair: ``a`` and ``b`` are (server, its figures)."""
    check = CHECKS[name]
    (server_a, values_a), (server_b, values_b) = a, b
    made = {
        "kind": kind,
        "a": server_a,
        "b": server_b,
        "metric": OPERATIONS,
        "margin": check.margin,
        "condition": (("profile", profile), ("check", name)),
        "check": name,
        "unit": check.unit,
        "scale": check.scale,
        "n_a": len(values_a),
        "n_b": len(values_b),
        "level": LEVEL,
    }
    found = bootstrap.interval(values_a, values_b, bootstrap.Read(check.scale), SEED, MIN_FIGURES)
    if found.reason is not None:
        return bootstrap.CheckComparison(
            outcome=UNDETERMINED, a_value=found.a_value, b_value=found.b_value, reasons=(found.reason,), **made
        )
    return bootstrap.CheckComparison(
        outcome=_outcome(check, found.low, found.high),
        estimate=found.estimate,
        a_value=found.a_value,
        b_value=found.b_value,
        low=found.low,
        high=found.high,
        **made,
    )


def operations_comparisons(results: list[dict], config: dict) -> list[bootstrap.CheckComparison]:
    """Every declared pair of each profile's servers, on every check both sides measured."""
    found = []
    by_profile: dict[str, dict[str, dict]] = {}
    for result in results:
        by_profile.setdefault(result["profile"], {})[result["server"]] = samples(result)
    for profile, servers in sorted(by_profile.items()):
        for kind, a, b in declared_pairs(config, sorted(servers)):
            for name in CHECKS:
                if servers[a].get(name) is not None and servers[b].get(name) is not None:
                    found.append(judge(kind, profile, name, (a, servers[a][name]), (b, servers[b][name])))
    return found


def operations_verdict_table(results: list[dict], config: dict) -> pd.DataFrame:
    """operations_verdicts.csv: a row per (profile, check, pair); ``estimate`` is a/b or a-b
    as ``scale`` says."""
    rows = [comparison.as_row() for comparison in operations_comparisons(results, config)]
    for row in rows:
        row["estimate"] = row.pop("ratio")
    columns = [
        "profile",
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
    return pd.DataFrame(rows, columns=columns)
