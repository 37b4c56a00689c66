"""Each server's knee from its rate cells (rows of latency.csv), and p99 at any
offered rate between those measured.

The knee is the highest fraction of the server's capacity before p99 leaves
its bound for good: p99 is fitted against the offered rate monotonically
(SciPy's isotonic regression, so one noisy fraction cannot bend the curve
back), the bound is ``max(k × base, base + Δ ms)`` (``plan.rates.KneeBound``),
and a crossing counts only when the next fraction is beyond the bound too (or
is the last measured). A fraction whose rate was not held by most repeats, or
with no latency, is beyond. The knee's interval comes from the repeats: each
fraction's repeats are resampled (seeded), the knee found again, and the
interval runs from the low quantile of the knee to the high quantile of the
first fraction beyond it — the knee lies between the fractions measured, and
the interval says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import isotonic_regression

from serverbench.plan.rates import KneeBound
from serverbench.record import flags as flagging
from serverbench.record.vocabulary import Outcome, Status
from serverbench.tables.columns import KNEE_COLUMNS
from serverbench.tables.latency import GROUP

RESAMPLES = 400


def by_fraction(group: pd.DataFrame) -> list[dict]:
    """Per fraction: median p99 and offered rate of the ok repeats, and whether the rate held."""
    points = []
    for fraction, repeats in group.groupby("fraction", sort=True):
        ok = repeats[repeats["status"] == Status.OK]
        p99 = ok["latency_p99_ms"].dropna()
        # The rate counts as held where most repeats held it (one stall of the machine is not the server).
        not_held = sum("rate_not_held" in flagging.parsed(entry) for entry in ok["flags"])
        points.append(
            {
                "fraction": float(fraction),
                "ok": len(p99) > 0,
                "p99": float(p99.median()) if len(p99) else None,
                "held": not_held <= len(ok) / 2,
                "offered_rps": float(ok["offered_rps"].median()) if len(ok) else None,
                "why": "; ".join(sorted(set(repeats["reason"].dropna()))) or None,
            }
        )
    return points


def _repeats(group: pd.DataFrame) -> list[dict]:
    """Per fraction, its repeats: p99 of the ok ones, and how many held the rate."""
    out = []
    for fraction, repeats in group.groupby("fraction", sort=True):
        ok = repeats[repeats["status"] == Status.OK]
        held = [("rate_not_held" not in flagging.parsed(entry)) for entry in ok["flags"]]
        out.append({"fraction": float(fraction), "p99": ok["latency_p99_ms"].to_numpy(dtype=float), "held": held})
    return out


def _beyond(points: list[dict], bound_ms: float) -> list[bool]:
    """Whether each fraction is beyond the bound: no latency, the rate not held, or its
    median p99 and the monotone fit of the medians both above the bound."""
    usable = [i for i, p in enumerate(points) if p["ok"] and p["held"]]
    fitted = dict.fromkeys(range(len(points)), np.inf)
    if usable:
        medians = np.array([points[i]["p99"] for i in usable], dtype=float)
        weights = np.array([max(1, points[i].get("count", 1)) for i in usable], dtype=float)
        fit = isotonic_regression(np.log(medians), weights=weights).x
        fitted.update(zip(usable, np.exp(fit), strict=True))
    return [not (p["ok"] and p["held"]) or (p["p99"] > bound_ms and fitted[i] > bound_ms) for i, p in enumerate(points)]


def _crossing(points: list[dict], bound_ms: float) -> int | None:
    """The index of the first fraction beyond the bound whose next fraction is beyond too
    (or which is the last): None when p99 stays within it over the range."""
    beyond = _beyond(points, bound_ms)
    for i in range(1, len(points)):
        if beyond[i] and (i == len(points) - 1 or beyond[i + 1]):
            return i
    return None


def _medians(repeats: list[dict]) -> list[dict]:
    points = []
    for fraction in repeats:
        p99 = fraction["p99"][~np.isnan(fraction["p99"])]
        held = fraction["held"]
        points.append(
            {
                "fraction": fraction["fraction"],
                "ok": len(p99) > 0,
                "p99": float(np.median(p99)) if len(p99) else None,
                "count": len(p99),
                # The rate counts as held where most repeats held it (one stall is not the server).
                "held": sum(not h for h in held) <= len(held) / 2,
            }
        )
    return points


def knee_interval(repeats: list[dict], bound: KneeBound, confidence: float, seed: int) -> tuple:
    """The knee's interval in fractions: (low quantile of the knee, high quantile of the
    first fraction beyond it; None when it stays in range too often)."""
    rng = np.random.default_rng(seed)
    knees_found, beyond_found = [], []
    for _ in range(RESAMPLES):
        resampled = []
        for fraction in repeats:
            take = rng.integers(0, len(fraction["held"]), len(fraction["held"])) if len(fraction["held"]) else []
            p99 = fraction["p99"][take] if len(take) else fraction["p99"]
            resampled.append({**fraction, "p99": p99, "held": [fraction["held"][i] for i in take]})
        points = _medians(resampled)
        if not points[0]["ok"]:
            continue
        crossing = _crossing(points, bound.of(points[0]["p99"]))
        knees_found.append(points[(crossing or len(points)) - 1]["fraction"])
        beyond_found.append(np.inf if crossing is None else points[crossing]["fraction"])
    if not knees_found:
        return None, None
    alpha = 1 - confidence
    # Order statistics, not interpolated between them: outward (conservative), and "never
    # crossed" (infinite) stays a value of its own instead of an inf - inf.
    high = float(np.quantile(beyond_found, 1 - alpha / 2, method=Outcome.HIGHER))
    return float(np.quantile(knees_found, alpha / 2, method=Outcome.LOWER)), (high if np.isfinite(high) else None)


def knee(group: pd.DataFrame, bound: KneeBound, confidence: float = 0.95, seed: int = 0) -> dict:
    """The knee of one server's rate cells (rows of latency.csv), with its interval."""
    repeats = _repeats(group)
    points = _medians(repeats)
    capacity_rps = group["capacity_rps"].dropna()
    out = {
        "capacity_rps": float(capacity_rps.iloc[0]) if len(capacity_rps) else None,
        "capacity_ci_low": _first(group["capacity_ci_low"]),
        "capacity_ci_high": _first(group["capacity_ci_high"]),
        **dict.fromkeys(["knee_fraction", "knee_rps", "knee_p99_ms", "knee_ci_low", "knee_ci_high"]),
    }
    if not points or not points[0]["ok"]:
        why = "; ".join(sorted(set(group["reason"].dropna()))) or ("no rate cell" if not points else None)
        return {**out, "knee_note": f"no latency at the lowest fraction ({why})"}
    limit = bound.of(points[0]["p99"])
    crossing = _crossing(points, limit)
    last = points[(crossing or len(points)) - 1]
    beyond = None if crossing is None else by_fraction(group)[crossing]
    out.update(knee_fraction=last["fraction"], knee_p99_ms=last["p99"])
    low, high = knee_interval(repeats, bound, confidence, seed)
    if out["capacity_rps"]:
        out["knee_rps"] = last["fraction"] * out["capacity_rps"]
        out["knee_ci_low"] = None if low is None else low * out["capacity_rps"]
        out["knee_ci_high"] = None if high is None else high * out["capacity_rps"]
    out["knee_note"] = _knee_note(points[0], last, beyond, bound, limit)
    return out


def _knee_note(base: dict, last: dict, beyond: dict | None, bound: KneeBound, limit: float) -> str:
    within = f"p99 stays within {limit:.3g} ms ({bound.describe()} its {base['p99']:.3g} ms at {base['fraction']:g})"
    if beyond is None:
        return f"{within} up to {last['fraction']:g}, the highest fraction measured: no knee in the range"
    if not beyond["ok"]:
        what = f"no latency at {beyond['fraction']:g} ({beyond['why']})"
    elif not beyond["held"]:
        what = f"the rate was not held at {beyond['fraction']:g}"
    else:
        what = f"p99 {beyond['p99']:.3g} ms at {beyond['fraction']:g}, and beyond the bound from there on"
    return f"{within} up to {last['fraction']:g}; beyond it {what}"


def _first(series: pd.Series):
    values = series.dropna()
    return float(values.iloc[0]) if len(values) else None


def knees(latency: pd.DataFrame, bounds: dict[str, KneeBound], confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """A row per (profile, workload, server, tool, concurrency of the capacity): capacity and knee."""
    rows = []
    for key, group in latency.groupby(GROUP, sort=True):
        row = dict(zip(GROUP, key, strict=True))
        row["language"] = group["language"].iloc[0]
        row.update(knee(group, bounds.get(row["profile"], KneeBound()), confidence, seed))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*GROUP, "language", *KNEE_COLUMNS])


def with_knees(
    summary: pd.DataFrame, latency: pd.DataFrame, bounds: dict[str, KneeBound], confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """summary.csv with each server's capacity and knee on the row of the cell its capacity came from."""
    summary = summary.copy()
    if latency.empty:
        return summary
    summary[KNEE_COLUMNS] = summary[KNEE_COLUMNS].astype(object)
    sources = latency.dropna(subset=["capacity_tool"]).groupby(GROUP).first()
    for _, row in knees(latency, bounds, confidence, seed).iterrows():
        key = tuple(row[GROUP])
        if key not in sources.index:
            continue
        source = sources.loc[key]
        mask = (
            (summary["profile"] == row["profile"])
            & (summary["workload"] == row["workload"])
            & (summary["server"] == row["server"])
            & (summary["tool"] == source["capacity_tool"])
            & (summary["concurrency"] == int(source["capacity_concurrency"]))
        )
        for column in KNEE_COLUMNS:
            summary.loc[mask, column] = row[column]
    return summary


def interpolated_p99(group: pd.DataFrame, rate: float) -> float | None:
    """p99 at an offered rate, log-linear between the rates measured (None outside them)."""
    points = [p for p in by_fraction(group) if p["ok"] and p["offered_rps"]]
    if not points:
        return None
    rates = np.array([p["offered_rps"] for p in points])
    if rate < rates.min() or rate > rates.max():
        return None
    return float(np.exp(np.interp(rate, rates, np.log([p["p99"] for p in points]))))
