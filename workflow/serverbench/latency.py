"""Latency under load: each server's capacity, rate cells at fractions of it, the knee.

Closed-loop figures say how much a server can push; operators ask how it
answers at the load a site really has. So, per (profile, workload, server):

1. ``capacity``: the highest median req/s among the server's closed-loop
   cells that may decide anything (none failed, none flagged with a
   ``comparisons.not_comparable_flags`` flag), with its bootstrap interval.
2. ``plan``: a rate cell offers ``fraction`` × capacity at a constant rate
   (oha, coordinated-omission corrected), long enough for ``tail_samples``
   answers above p99.9, within the profile's min and max duration.
3. ``outcome``: the rate achieved, the requests the tool could not send on
   schedule, and how many answers p99.9 rests on.
4. ``knees``: the highest fraction at which p99 stays within
   ``knee_p99_multiple`` × the p99 at the lowest fraction, with the rate held.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd

from serverbench import results, stats
from serverbench.errors import CellSkipped
from serverbench.model import KNEE_COLUMNS, CellRecord, LoadResult, load_record

CAPACITY_SCHEMA = "serverbench.capacity/1"
DEFAULT_KNEE_MULTIPLE = 3.0  # the schema's default of open_loop.knee_p99_multiple
LATENCY_COLUMNS = [
    "profile", "workload", "tool", "server", "language", "family", "concurrency", "fraction", "repeat",
    "status", "reason", "capacity_tool", "capacity_concurrency", "capacity_rps", "capacity_ci_low",
    "capacity_ci_high", "offered_rps", "achieved_rps",
    "achieved_share", "not_sent", "duration_s", "requests", "latency_p50_ms", "latency_p90_ms",
    "latency_p99_ms", "latency_p99_9_ms", "latency_max_ms", "above_p99_9", "error_rate", "flags", "result",
]  # fmt: skip
GROUP = ["profile", "workload", "server"]


# --- 1. capacity -----------------------------------------------------------------


def _why_not(records: list[CellRecord], excluded: set[str]) -> list[str]:
    ok = [r for r in records if r.status == "ok"]
    reasons = sorted({f"{r.status}: {r.reason}" for r in records if r.status != "ok"})
    if not ok:
        return reasons or ["no repeat"]
    return sorted({flag for record in ok for flag in record.flags} & excluded)


def capacity(records: list[CellRecord], excluded: set[str], confidence: float, seed: int) -> dict:
    """The server's capacity from its closed-loop cells (records of every repeat)."""
    groups: dict[tuple, list[CellRecord]] = {}
    for record in records:
        groups.setdefault((record.cell.tool, record.cell.concurrency), []).append(record)
    candidates = []
    for (tool, concurrency), group in sorted(groups.items()):
        rps = [r.load.requests_per_s for r in group if r.status == "ok" and r.load]
        candidates.append(
            {
                "tool": tool,
                "concurrency": concurrency,
                "repeats_ok": len(rps),
                "median_rps": statistics.median(rps) if rps else None,
                "rps": rps,
                "why_not": _why_not(group, excluded),
            }
        )
    usable = [c for c in candidates if not c["why_not"] and c["median_rps"]]
    out = {"schema": CAPACITY_SCHEMA, "candidates": [{k: v for k, v in c.items() if k != "rps"} for c in candidates]}
    if not usable:
        why = "; ".join(f"c={c['concurrency']} ({', '.join(c['why_not'])})" for c in candidates) or "no cell"
        return {**out, "status": "not measured", "reason": f"no comparable closed-loop cell: {why}"}
    best = max(usable, key=lambda c: c["median_rps"])
    low, high = stats.median_ci(best["rps"], confidence, seed)
    return {
        **out,
        "status": "measured",
        "reason": None,
        "rps": best["median_rps"],
        "ci_low": low,
        "ci_high": high,
        "confidence": confidence,
        "tool": best["tool"],
        "concurrency": best["concurrency"],
        "repeats_ok": best["repeats_ok"],
    }


def write_capacity(paths, out, config: dict) -> dict:
    """The capacity file of one server (rule capacity)."""
    records = [load_record(path) for path in paths]
    spec = config["comparisons"]
    measured = capacity(records, set(spec["not_comparable_flags"]), spec["confidence"], config["seed"])
    measured["cells"] = [str(path) for path in paths]
    results.write_json(out, measured)
    return measured


# --- 2. plan and 3. outcome of a rate cell ---------------------------------------------


def plan(measured: dict, fraction: float, spec: dict) -> dict:
    """What a rate cell offers, and for how long; ``measured`` is the capacity file's content."""
    offered = fraction * measured["rps"]
    wanted = math.ceil(spec["tail_samples"] / (0.001 * offered)) if offered > 0 else spec["max_duration"]
    duration = min(spec["max_duration"], max(spec["min_duration"], wanted))
    return {
        "fraction": fraction,
        "capacity_rps": measured["rps"],
        "capacity_ci": [measured.get("ci_low"), measured.get("ci_high")],
        "capacity_tool": measured["tool"],
        "capacity_concurrency": measured["concurrency"],
        "offered_rps": round(offered, 3),
        "duration_s": duration,
        "tail_samples_wanted": spec["tail_samples"],
    }


def rate_plan(capacity_path, fraction: float, spec: dict) -> dict:
    """A rate cell's plan from its server's capacity file; skipped where there is no capacity."""
    measured = results.read_json(capacity_path)
    if measured["status"] != "measured":
        raise CellSkipped(f"no capacity to offer {fraction:g} of: {measured['reason']}")
    return plan(measured, fraction, spec)


def outcome(planned: dict, load: LoadResult) -> dict:
    """The rate the tool held, what it could not send on schedule, what p99.9 rests on."""
    cut_off = sum((load.errors_detail.get("cut_off_at_deadline") or {}).values())
    sent = (load.requests or 0) + cut_off
    due = planned["offered_rps"] * planned["duration_s"]
    answered = (load.requests or 0) - (load.errors_total or 0)
    achieved = load.requests_per_s or 0.0
    return {
        **planned,
        "achieved_rps": round(achieved, 3),
        "achieved_share": round(achieved / planned["offered_rps"], 4) if planned["offered_rps"] else None,
        "sent": sent,
        "not_sent": max(0, round(due - sent)),
        "above_p99_9": math.floor(0.001 * max(answered, 0)),
    }


def open_loop_flags(section: dict | None, thresholds: dict) -> list[str]:
    """``rate_not_held`` and ``thin_tail`` of a rate cell's record."""
    if not section or section.get("achieved_share") is None:
        return []
    flags = []
    if section["achieved_share"] < thresholds.get("rate_held_share", 0.95):
        flags.append("rate_not_held")
    if section["above_p99_9"] < section["tail_samples_wanted"]:
        flags.append("thin_tail")
    return flags


# --- 4. tables and knees ------------------------------------------------------------------


def latency_row(record: CellRecord, path) -> dict:
    load, section = record.load or LoadResult(), record.open_loop or {}
    latency = load.latency_ms
    ci = section.get("capacity_ci") or [None, None]
    return {
        **record.cell.to_dict(),
        "status": record.status,
        "reason": record.reason,
        "capacity_tool": section.get("capacity_tool"),
        "capacity_concurrency": section.get("capacity_concurrency"),
        "capacity_rps": section.get("capacity_rps"),
        "capacity_ci_low": ci[0],
        "capacity_ci_high": ci[1],
        "offered_rps": section.get("offered_rps"),
        "achieved_rps": section.get("achieved_rps"),
        "achieved_share": section.get("achieved_share"),
        "not_sent": section.get("not_sent"),
        "duration_s": load.duration_s,
        "requests": load.requests,
        "latency_p50_ms": latency.p50,
        "latency_p90_ms": latency.p90,
        "latency_p99_ms": latency.p99,
        "latency_p99_9_ms": latency.p99_9,
        "latency_max_ms": latency.max,
        "above_p99_9": section.get("above_p99_9"),
        "error_rate": load.error_rate,
        "flags": ";".join(record.flags),
        "result": str(path),
    }


def latency_table(paths) -> pd.DataFrame:
    rows = [latency_row(load_record(path), path) for path in sorted(map(str, paths))]
    frame = pd.DataFrame(rows, columns=LATENCY_COLUMNS)
    if not frame.empty:
        frame = frame.sort_values([*GROUP, "fraction", "repeat"], kind="stable").reset_index(drop=True)
    return frame


def _by_fraction(group: pd.DataFrame) -> list[dict]:
    """Per fraction: median p99 and offered rate of the ok repeats, and whether the rate held."""
    points = []
    for fraction, repeats in group.groupby("fraction", sort=True):
        ok = repeats[repeats["status"] == "ok"]
        p99 = ok["latency_p99_ms"].dropna()
        # The rate counts as held where most repeats held it (one stall of the machine is not the server).
        not_held = sum("rate_not_held" in str(entry).split(";") for entry in ok["flags"].fillna(""))
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
    points = _by_fraction(group)
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


def knee_multiples(config: dict) -> dict[str, float]:
    """Each profile's knee bound (open_loop.knee_p99_multiple), for the tables and the chart."""
    return {
        name: (profile.get("open_loop") or {}).get("knee_p99_multiple", DEFAULT_KNEE_MULTIPLE)
        for name, profile in config["profiles"].items()
    }


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
    points = [p for p in _by_fraction(group) if p["ok"] and p["offered_rps"]]
    if not points:
        return None
    rates = np.array([p["offered_rps"] for p in points])
    if rate < rates.min() or rate > rates.max():
        return None
    return float(np.exp(np.interp(rate, rates, np.log([p["p99"] for p in points]))))


# --- 5. what the rate cells answer ------------------------------------------------------

LATENCY_KINDS = ("knee", "knee ratio", "p99 at fraction", "p99 at equal load")


def _server_groups(latency: pd.DataFrame) -> dict[tuple, dict[str, pd.DataFrame]]:
    """Per condition (profile, workload, tool, connections): each server's rate cells."""
    out: dict[tuple, dict[str, pd.DataFrame]] = {}
    for key, group in latency.groupby(["profile", "workload", "tool", "concurrency", "server"], sort=True):
        out.setdefault(key[:4], {})[key[4]] = group
    return out


def latency_verdicts(latency: pd.DataFrame, config: dict, pairs_of) -> list[dict]:
    """Rows for verdicts.csv: each server's knee, and for each declared pair (``pairs_of(servers)``
    gives (kind, a, b)) the knees' ratio and p99 at equal fractions and at equal offered load."""
    confidence, seed = config["comparisons"]["confidence"], config["seed"]
    rows = []
    for condition, servers in _server_groups(latency).items():
        base = dict(zip(["profile", "workload", "tool", "concurrency"], condition, strict=True))
        multiple = knee_multiples(config)[base["profile"]]
        found = {name: knee(group, multiple) for name, group in servers.items()}
        languages = {name: group["language"].iloc[0] for name, group in servers.items()}
        for name in sorted(servers):
            rows.append({**base, "kind": "knee", "a": name, "language_a": languages[name], **_knee_row(found[name])})
        for kind, a, b in _latency_pairs(found, languages, pairs_of):
            pair = {**base, "a": a, "b": b, "language_a": languages[a], "language_b": languages[b], "why": kind}
            rows.append({**pair, "kind": "knee ratio", **_knee_ratio(found[a], found[b])})
            rows += [{**pair, **row} for row in _p99_at_fractions(servers[a], servers[b], confidence, seed)]
            rows.append({**pair, "kind": "p99 at equal load", **_p99_at_equal_load(servers[a], servers[b], found)})
    return rows


def _latency_pairs(found: dict, languages: dict, pairs_of) -> list[tuple[str, str, str]]:
    """Declared pairs among the servers with a knee (a server without one says why in its own row)."""
    measured = sorted(name for name in found if found[name]["knee_rps"])
    pairs = list(pairs_of(measured))
    best = {}
    for language in ("python", "perl"):
        members = [s for s in measured if languages[s] == language]
        if members:
            best[language] = max(members, key=lambda s: found[s]["knee_rps"])
    if len(best) == 2:
        pairs.append(("best of language (highest knee)", best["python"], best["perl"]))
    return pairs


def _knee_row(found: dict) -> dict:
    if found["knee_rps"] is None:
        return {"verdict": "not measured", "why": found["knee_note"]}
    return {"median_a": found["knee_rps"], "verdict": "measured", "why": found["knee_note"]}


def _knee_ratio(a: dict, b: dict) -> dict:
    if not a["knee_rps"] or not b["knee_rps"]:
        return {"verdict": "not comparable", "why": "a knee was not measured"}
    ratio = a["knee_rps"] / b["knee_rps"]
    return {"median_a": a["knee_rps"], "median_b": b["knee_rps"], "ratio": ratio, "verdict": "not tested"}


def _p99_at_fractions(a: pd.DataFrame, b: pd.DataFrame, confidence: float, seed: int) -> list[dict]:
    rows = []
    for fraction in sorted(set(a["fraction"]) & set(b["fraction"])):
        values = [
            g[(g["fraction"] == fraction) & (g["status"] == "ok")]["latency_p99_ms"].dropna().tolist() for g in (a, b)
        ]
        row = {"kind": "p99 at fraction", "fraction": float(fraction)}
        if not values[0] or not values[1]:
            rows.append({**row, "verdict": "not comparable", "why": f"no latency at {fraction:g} on one side"})
            continue
        result = stats.compare(values[0], values[1], confidence, seed)
        row.update(
            n_a=result.n_a, n_b=result.n_b, median_a=result.median_a, median_b=result.median_b, ratio=result.ratio,
            ci_low=result.ci_low, ci_high=result.ci_high, p_value=result.p_value,
        )  # fmt: skip
        rows.append(row)
    return rows


def _p99_at_equal_load(a: pd.DataFrame, b: pd.DataFrame, found: dict) -> dict:
    """p99 of both at one offered rate: the lower knee, moved into the range of rates both were offered."""
    names = (a["server"].iloc[0], b["server"].iloc[0])
    ranges = [_offered_range(group) for group in (a, b)]
    low, high = max(r[0] for r in ranges), min(r[1] for r in ranges)
    if low > high:
        return {"verdict": "not comparable", "why": "no offered rate lies within both servers' measured rates"}
    rate = min(max(min(found[name]["knee_rps"] for name in names), low), high)
    p99_a, p99_b = interpolated_p99(a, rate), interpolated_p99(b, rate)
    return {"offered_rps": rate, "median_a": p99_a, "median_b": p99_b, "ratio": p99_a / p99_b, "verdict": "not tested"}


def _offered_range(group: pd.DataFrame) -> tuple[float, float]:
    rates = [p["offered_rps"] for p in _by_fraction(group) if p["ok"] and p["offered_rps"]]
    return min(rates), max(rates)


def latency_verdict(row: dict, alpha: float) -> str:
    """A p99 comparison's verdict: lower p99 is better, so a ratio (A/B) above 1 is ``higher p99``."""
    decided = stats.verdict(row["ratio"], row["ci_low"], row["ci_high"], row["p_holm"], alpha)
    return {"faster": "higher p99", "slower": "lower p99"}.get(decided, decided)


def latency_sentence(row: dict, confidence: float) -> str:
    connections = int(row["concurrency"])
    where = f"Latency under load ({row['tool']}, {connections} connection{'s' if connections != 1 else ''})"
    a, b, why = row["a"], row.get("b"), f" ({row['why']})" if row.get("why") else ""
    if row["kind"] == "knee":
        if row["verdict"] != "measured":
            return f"{where}: {a} has no knee figure{why}"
        return f"{where}: {a} answers within its p99 bound up to {row['median_a']:,.0f} req/s{why}"
    if row["verdict"] == "not comparable":
        return f"{where}, {a} against {b}, {row['kind']}: not comparable{why}"
    times = f"{row['ratio']:.2f}×"
    if row["kind"] == "knee ratio":
        return (
            f"{where}: {a}'s knee is {times} {b}'s ({row['median_a']:,.0f} against {row['median_b']:,.0f} req/s;"
            f" one figure each, not tested){why}"
        )
    if row["kind"] == "p99 at equal load":
        return (
            f"{where}: at {row['offered_rps']:,.0f} req/s offered to both, {a}'s p99 is {row['median_a']:.3g} ms"
            f" against {b}'s {row['median_b']:.3g} ms ({times}, interpolated, not tested){why}"
        )
    interval = (
        f"{confidence:.0%} CI {row['ci_low']:.2f}–{row['ci_high']:.2f}"
        if row.get("ci_low") is not None and not pd.isna(row.get("ci_low"))
        else f"{row.get('n_a')} against {row.get('n_b')} runs: not tested"
    )
    return (
        f"{where}: at {row['fraction']:g} of its own capacity, {a}'s p99 is {times} {b}'s"
        f" ({row['median_a']:.3g} against {row['median_b']:.3g} ms, {interval}): {row['verdict']}{why}"
    )
