"""Comparisons on work per request (the work lens, ``work.csv``): *more work*,
*less work*, *equivalent* or *undetermined*, never faster or slower.

The figure is user-space instructions per request. The lens repeats itself
closely but not exactly (memory layout follows the environment and paths), so
each run measures its own spread: the A/A twin (an alias, started from another
directory and environment) against its original. That spread is its own
server's (gunicorn's lives sometimes hold a whole-heap collection by the clock;
uWSGI's counts repeat to 0.005%), so it widens only the comparisons of the
twin's family: its original, the twin and the original's variants. A server
whose own lives spread more declares it in the catalogue (``work_spread``:
Starman's 0.3%, NGINX Unit's 0.2% (its dynamic processes' 2%), measured). A comparison's interval is its
ratio times or divided by ``exp(h)``, with h three times the largest spread
that applies, and at least ``SPREAD_FLOOR`` (the lens's target spread);
it is read against ``work.margin`` as the timed comparisons are read against
theirs: more work when the whole interval lies above 1 + margin. Work is not
speed: a server can do fewer instructions and still answer more slowly
(kernel time, instructions per cycle, caches), which is why the page gives
both.
"""

from __future__ import annotations

import math

import pandas as pd

from serverbench.decide import margins
from serverbench.decide.judgement import (
    EQUIVALENT,
    FASTER,
    LESS_WORK,
    MORE_WORK,
    NOT_COMPARABLE,
    SLOWER,
    WORK,
    Comparison,
    Reason,
)
from serverbench.decide.pairs import AA, declared_pairs
from serverbench.record.vocabulary import Status
from serverbench.tables.columns import WORK_CONDITION

SPREAD_FLOOR = 0.001  # 0.1%: an interval never narrower than the lens's target spread
SPREAD_TIMES = 3
FIGURE = "instructions_per_request"
WORK_VERDICT_COLUMNS = [
    *WORK_CONDITION,
    "kind",
    "a",
    "b",
    "metric",
    "a_value",
    "b_value",
    "ratio",
    "ci_low",
    "ci_high",
    "level",
    "margin",
    "outcome",
    "detectable_ratio",
    "reason_codes",
    "why",
    "a_syscalls",
    "b_syscalls",
    # The timed lens's comparison of the same pair (its lowest concurrency), and whether both agree.
    "timed_at",
    "timed_ratio",
    "timed_outcome",
    "timed_detectable_ratio",
    "agrees",
]


def outcome(low: float, high: float, margin: float, question=margins.Question.IN_ONE_RUN) -> str:
    """The interval of a work ratio against the ±margin band of ``question``: two servers of
    one run (the default), or one server between two runs (``compare --metric work``)."""
    return margins.outcome(margins.side(low, high, margin, question), above=MORE_WORK, below=LESS_WORK)


def aa_spread(rows: pd.DataFrame, config: dict) -> float | None:
    """The largest |log ratio| of an A/A twin against its original at one condition (None: no twin)."""
    figures = rows.set_index("server")[FIGURE].dropna()
    spreads = [
        abs(math.log(figures[a] / figures[b]))
        for kind, a, b in declared_pairs(config, list(figures.index))
        if kind == AA and figures[a] > 0 and figures[b] > 0
    ]
    return max(spreads) if spreads else None


def twin_family(config: dict, server: str) -> str | None:
    """The server an A/A twin copies, where ``server`` is it, its twin or a variant of it: the
    servers whose spread the twin measures (None for any other)."""
    catalogue = config["catalogue"]
    original = catalogue.get(server, {}).get("alias_of") or catalogue.get(server, {}).get("variant_of") or server
    twinned = any(spec.get("alias_of") == original for spec in catalogue.values())
    return original if twinned else None


def declared_spread(config: dict, server: str) -> float:
    """A server's own spread between lives, as the catalogue declares it (0: none declared)."""
    return float(config["catalogue"].get(server, {}).get("work_spread") or 0.0)


def _twin_spread(config: dict, aa: float | None, servers: tuple[str, ...]) -> float:
    """The A/A spread where one of ``servers`` is the twin's server (or its twin, or a variant
    of it), else 0: the twin measures the lens on its own server. One of its lives holding a
    whole-heap collection the other did not (gunicorn 1.12x its twin once in five runs) says
    nothing of uWSGI, whose counts repeat to 0.005% across runs."""
    return (aa or 0.0) if any(twin_family(config, server) for server in servers) else 0.0


def half_width(config: dict, aa: float | None, *servers: str) -> float:
    """h of a comparison's interval: three times the largest spread that applies (the A/A
    spread for the twin's family, each server's declared one), at least the floor."""
    spreads = [_twin_spread(config, aa, servers), *(declared_spread(config, server) for server in servers)]
    return max(SPREAD_TIMES * max(spreads), SPREAD_FLOOR)


def widened(config: dict, aa: float | None, *servers: str) -> tuple[Reason, ...]:
    """Why an interval is as wide as it is, where the run's A/A spread does not say it: a
    server's declared spread, or a pair outside the twin's family (its own spread, not the twin's)."""
    twin = _twin_spread(config, aa, servers)
    reasons = tuple(
        Reason(
            "declared spread",
            f"{server}'s own lives spread {declared_spread(config, server):.1%} (catalogue work_spread): "
            "its interval is set by that",
        )
        for server in servers
        if declared_spread(config, server) > twin
    )
    declared = max(declared_spread(config, server) for server in servers)
    if aa and not twin and aa > declared:
        read_with = "their declared spread" if declared else f"the lens's floor ({SPREAD_FLOOR:.1%})"
        words = (
            f"the A/A twin's spread ({aa:.2%}) is its own server's; {' and '.join(servers)} are read with {read_with}"
        )
        reasons += (Reason("not the twin's spread", words),)
    return reasons


def _judge(
    kind: str, a: pd.Series, b: pd.Series, condition, width: float, margin: float, reasons: tuple[Reason, ...]
) -> Comparison:
    common = {
        "kind": kind,
        "a": a["server"],
        "b": b["server"],
        "metric": WORK,
        "condition": condition,
        "a_value": a[FIGURE],
        "b_value": b[FIGURE],
        "margin": margin,
    }
    missing = [row for row in (a, b) if row["status"] != Status.OK or not row[FIGURE] or row[FIGURE] <= 0]
    if missing:
        why = tuple(Reason("no work figure", f"{row['server']}: {row['reason'] or 'no figure'}") for row in missing)
        return Comparison(**common, outcome=NOT_COMPARABLE, reasons=why)
    ratio = a[FIGURE] / b[FIGURE]
    low, high = ratio * math.exp(-width), ratio * math.exp(width)
    return Comparison(
        **common,
        outcome=outcome(low, high, margin),
        estimate=ratio,
        low=low,
        high=high,
        detectable_ratio=(1 + margin) * math.exp(width),
        reasons=reasons,
    )


def work_comparisons(work: pd.DataFrame, config: dict) -> list[Comparison]:
    """The declared pairs judged on instructions per request, at each (profile, workload)."""
    margin = config["work_lens"]["margin"]
    found = []
    for key, rows in work.groupby(WORK_CONDITION, sort=True):
        condition = tuple(zip(WORK_CONDITION, key, strict=True))
        by_server = {row["server"]: row for _, row in rows.iterrows()}
        spread = aa_spread(rows[rows["status"] == Status.OK], config)
        reasons = (
            ()
            if spread is not None
            else (Reason("no A/A twin", f"no A/A twin measured: the lens's spread taken as {SPREAD_FLOOR:.1%}"),)
        )
        for kind, a, b in declared_pairs(config, list(by_server)):
            width = half_width(config, spread, a, b)
            why = reasons + widened(config, spread, a, b)
            found.append(_judge(kind, by_server[a], by_server[b], condition, width, margin, why))
    return found


# Which way a timed outcome points, in the work lens's terms: more work goes with slower.
TIMED_DIRECTION = {FASTER: LESS_WORK, SLOWER: MORE_WORK, EQUIVALENT: EQUIVALENT}


def timed_beside(row: dict, verdicts: pd.DataFrame | None) -> dict:
    """The timed lens's comparison of the same pair (its lowest concurrency), and whether
    the two lenses point the same way where both decided (None where either did not)."""
    if verdicts is None or verdicts.empty:
        return {}
    same = verdicts[
        (verdicts["a"] == row["a"])
        & (verdicts["b"] == row["b"])
        & (verdicts["profile"] == row["profile"])
        & (verdicts["workload"] == row["workload"])
    ]
    if same.empty:
        return {}
    timed = same.sort_values("concurrency").iloc[0]
    direction = TIMED_DIRECTION.get(timed["outcome"])
    decided = row["outcome"] in (MORE_WORK, LESS_WORK, EQUIVALENT)
    return {
        "timed_at": f"{timed['tool']} c={int(timed['concurrency'])}",
        "timed_ratio": timed["ratio"],
        "timed_outcome": timed["outcome"],
        "timed_detectable_ratio": timed.get("detectable_ratio"),
        "agrees": (direction == row["outcome"]) if direction and decided else None,
    }


def work_verdict_table(work: pd.DataFrame, config: dict, verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """work_verdicts.csv: a row per comparison, with each side's syscalls per request and the
    timed lens's comparison of the same pair beside it."""
    syscalls = work.set_index([*WORK_CONDITION, "server"])["syscalls_per_request"].to_dict()
    rows = []
    for comparison in work_comparisons(work, config):
        row = comparison.as_row()
        where = tuple(row[column] for column in WORK_CONDITION)
        row["a_syscalls"], row["b_syscalls"] = syscalls.get((*where, row["a"])), syscalls.get((*where, row["b"]))
        rows.append(row | timed_beside(row, verdicts))
    return pd.DataFrame(rows, columns=WORK_VERDICT_COLUMNS)
