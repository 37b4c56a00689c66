"""What the rate cells answer (latency under load): each server's knee, and for
each declared pair the knees' ratio, p99 at equal fractions of each one's own
capacity (tested) and p99 at one offered rate (interpolated, not tested)."""

from __future__ import annotations

import pandas as pd

from serverbench.decide import stats
from serverbench.decide.judgement import LATENCY, Reason, TimedComparison
from serverbench.decide.pairs import best_of_languages, declared_pairs
from serverbench.plan.rates import knee_bounds
from serverbench.record.vocabulary import Kind, Outcome, Status
from serverbench.tables.columns import CONDITION
from serverbench.tables.knees import by_fraction, interpolated_p99, knee

BEST_KNEE = "best of language (highest knee)"


def _server_groups(latency: pd.DataFrame) -> dict[tuple, dict[str, pd.DataFrame]]:
    """Per condition (profile, workload, tool, connections): each server's rate cells."""
    out: dict[tuple, dict[str, pd.DataFrame]] = {}
    for key, group in latency.groupby(["profile", "workload", "tool", "concurrency", "server"], sort=True):
        out.setdefault(key[:4], {})[key[4]] = group
    return out


def latency_verdicts(latency: pd.DataFrame, config: dict) -> list[TimedComparison]:
    """Each server's knee, and for each declared pair of servers with a knee the knees' ratio
    and p99 at equal fractions and at equal offered load (before Holm)."""
    confidence, seed = config["comparisons"]["confidence"], config["seed"]
    bounds, rows = knee_bounds(config), []
    for condition, servers in _server_groups(latency).items():
        base = dict(zip(["profile", "workload", "tool", "concurrency"], condition, strict=True))
        found = {name: knee(group, bounds[base["profile"]], confidence, seed) for name, group in servers.items()}
        languages = {name: group["language"].iloc[0] for name, group in servers.items()}
        for name in sorted(servers):
            rows.append({**base, "kind": Kind.KNEE, "a": name, "language_a": languages[name], **_knee_row(found[name])})
        for kind, a, b in latency_pairs(config, found):
            pair = {**base, "a": a, "b": b, "language_a": languages[a], "language_b": languages[b], "why": kind}
            rows.append({**pair, "kind": Kind.KNEE_RATIO, **_knee_ratio(found[a], found[b])})
            rows += [{**pair, **row} for row in _p99_at_fractions(servers[a], servers[b], confidence, seed)]
            rows.append({**pair, "kind": Kind.P99_AT_EQUAL_LOAD, **_p99_at_equal_load(servers[a], servers[b], found)})
    return [_as_comparison(row) for row in rows]


# The fields of a latency row, by their verdicts.csv names.
RENAMED = {"median_a": "a_value", "median_b": "b_value", "ratio": "estimate", "ci_low": "low", "ci_high": "high"}
KEPT = ("kind", "a", "b", "language_a", "language_b", "n_a", "n_b", "p_value", "fraction", "offered_rps")


def _as_comparison(row: dict) -> TimedComparison:
    """A latency row, built by the functions below, made into its comparison."""
    found = {RENAMED.get(key, key): value for key, value in row.items() if key in RENAMED or key in KEPT}
    why = row.get("why")
    return TimedComparison(
        **{"b": None, **found},
        metric=LATENCY,
        condition=tuple((column, row[column]) for column in CONDITION),
        outcome=row.get("outcome", ""),
        reasons=(Reason(row["kind"], why),) if why else (),
    )


def latency_pairs(config: dict, found: dict) -> list[tuple[str, str, str]]:
    """Declared pairs among the servers with a knee (a server without one says why in its own row),
    and the servers with the highest knee of each two languages."""
    measured = sorted(name for name in found if found[name]["knee_rps"])
    knees = {name: found[name]["knee_rps"] for name in measured}
    best = best_of_languages(config, knees, measured).values()
    return declared_pairs(config, measured) + [(BEST_KNEE, a, b) for a, b in best if a and b]


def _knee_row(found: dict) -> dict:
    if found["knee_rps"] is None:
        return {"outcome": Outcome.NOT_MEASURED, "why": found["knee_note"]}
    return {
        "median_a": found["knee_rps"],
        "ci_low": found["knee_ci_low"],
        "ci_high": found["knee_ci_high"],
        "outcome": Outcome.MEASURED,
        "why": found["knee_note"],
    }


def _knee_ratio(a: dict, b: dict) -> dict:
    if not a["knee_rps"] or not b["knee_rps"]:
        return {"outcome": Outcome.NOT_COMPARABLE, "why": "a knee was not measured"}
    ratio = a["knee_rps"] / b["knee_rps"]
    return {"median_a": a["knee_rps"], "median_b": b["knee_rps"], "ratio": ratio, "outcome": Outcome.NOT_TESTED}


def _p99_at_fractions(a: pd.DataFrame, b: pd.DataFrame, confidence: float, seed: int) -> list[dict]:
    rows = []
    for fraction in sorted(set(a["fraction"]) & set(b["fraction"])):
        values = [
            g[(g["fraction"] == fraction) & (g["status"] == Status.OK)]["latency_p99_ms"].dropna().tolist()
            for g in (a, b)
        ]
        row = {"kind": Kind.P99_AT_FRACTION, "fraction": float(fraction)}
        if not values[0] or not values[1]:
            rows.append({**row, "outcome": Outcome.NOT_COMPARABLE, "why": f"no latency at {fraction:g} on one side"})
            continue
        rows.append({**row, **stats.compare(values[0], values[1], confidence, seed).fields()})
    return rows


def _p99_at_equal_load(a: pd.DataFrame, b: pd.DataFrame, found: dict) -> dict:
    """p99 of both at one offered rate: the lower knee, moved into the range of rates both were offered."""
    names = (a["server"].iloc[0], b["server"].iloc[0])
    ranges = [_offered_range(group) for group in (a, b)]
    low, high = max(r[0] for r in ranges), min(r[1] for r in ranges)
    if low > high:
        return {"outcome": Outcome.NOT_COMPARABLE, "why": "no offered rate lies within both servers' measured rates"}
    rate = min(max(min(found[name]["knee_rps"] for name in names), low), high)
    p99_a, p99_b = interpolated_p99(a, rate), interpolated_p99(b, rate)
    ratio = p99_a / p99_b
    return {"offered_rps": rate, "median_a": p99_a, "median_b": p99_b, "ratio": ratio, "outcome": Outcome.NOT_TESTED}


def _offered_range(group: pd.DataFrame) -> tuple[float, float]:
    rates = [p["offered_rps"] for p in by_fraction(group) if p["ok"] and p["offered_rps"]]
    return min(rates), max(rates)


def latency_verdict(found: TimedComparison, alpha: float) -> Outcome:
    """A p99 comparison's verdict: lower p99 is better, so a ratio (A/B) above 1 is ``higher p99``."""
    return stats.verdict(found.low, found.high, found.p_holm, alpha, above=Outcome.HIGHER_P99, below=Outcome.LOWER_P99)
