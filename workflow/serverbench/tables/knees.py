"""Each server's knee from its rate cells (rows of latency.csv): the highest
fraction of its capacity at which p99 stays within ``knee_p99_multiple`` × the
p99 at the lowest fraction, with the rate held; and p99 at any offered rate
between those measured."""

from __future__ import annotations

import numpy as np
import pandas as pd

from serverbench.plan.rates import DEFAULT_KNEE_MULTIPLE
from serverbench.record import flags as flagging
from serverbench.tables.columns import KNEE_COLUMNS
from serverbench.tables.latency import GROUP


def by_fraction(group: pd.DataFrame) -> list[dict]:
    """Per fraction: median p99 and offered rate of the ok repeats, and whether the rate held."""
    points = []
    for fraction, repeats in group.groupby("fraction", sort=True):
        ok = repeats[repeats["status"] == "ok"]
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


def knee(group: pd.DataFrame, multiple: float) -> dict:
    """The knee of one server's rate cells (rows of latency.csv)."""
    points = by_fraction(group)
    capacity_rps = group["capacity_rps"].dropna()
    out = {
        "capacity_rps": float(capacity_rps.iloc[0]) if len(capacity_rps) else None,
        "capacity_ci_low": _first(group["capacity_ci_low"]),
        "capacity_ci_high": _first(group["capacity_ci_high"]),
        "knee_fraction": None,
        "knee_rps": None,
        "knee_p99_ms": None,
    }
    if not points or not points[0]["ok"]:
        why = points[0]["why"] if points else "no rate cell"
        return {**out, "knee_note": f"no latency at the lowest fraction ({why})"}
    bound = multiple * points[0]["p99"]
    last, beyond = points[0], None
    for point in points:
        if not (point["ok"] and point["held"] and point["p99"] <= bound):
            beyond = point
            break
        last = point
    out.update(knee_fraction=last["fraction"], knee_p99_ms=last["p99"])
    if out["capacity_rps"]:
        out["knee_rps"] = last["fraction"] * out["capacity_rps"]
    out["knee_note"] = _knee_note(points[0], last, beyond, multiple)
    return out


def _knee_note(base: dict, last: dict, beyond: dict | None, multiple: float) -> str:
    within = f"p99 stays within {multiple:g}× its {base['p99']:.3g} ms at {base['fraction']:g}"
    if beyond is None:
        return f"{within} up to {last['fraction']:g}, the highest fraction measured: no knee in the range"
    if not beyond["ok"]:
        what = f"no latency at {beyond['fraction']:g} ({beyond['why']})"
    elif not beyond["held"]:
        what = f"the rate was not held at {beyond['fraction']:g}"
    else:
        what = f"p99 {beyond['p99']:.3g} ms at {beyond['fraction']:g}"
    return f"{within} up to {last['fraction']:g}; beyond it {what}"


def _first(series: pd.Series):
    values = series.dropna()
    return float(values.iloc[0]) if len(values) else None


def knees(latency: pd.DataFrame, multiples: dict[str, float]) -> pd.DataFrame:
    """A row per (profile, workload, server, tool, concurrency of the capacity): capacity and knee."""
    rows = []
    for key, group in latency.groupby(GROUP, sort=True):
        row = dict(zip(GROUP, key, strict=True))
        row["language"] = group["language"].iloc[0]
        row.update(knee(group, multiples.get(row["profile"], DEFAULT_KNEE_MULTIPLE)))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*GROUP, "language", *KNEE_COLUMNS])


def with_knees(summary: pd.DataFrame, latency: pd.DataFrame, multiples: dict[str, float]) -> pd.DataFrame:
    """summary.csv with each server's capacity and knee on the row of the cell its capacity came from."""
    summary = summary.copy()
    if latency.empty:
        return summary
    summary[KNEE_COLUMNS] = summary[KNEE_COLUMNS].astype(object)
    sources = latency.dropna(subset=["capacity_tool"]).groupby(GROUP).first()
    for _, row in knees(latency, multiples).iterrows():
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
