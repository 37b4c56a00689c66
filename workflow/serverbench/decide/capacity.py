"""A server's capacity, which its rate cells offer fractions of (latency under load).

Per (profile, workload, server): the highest median req/s among the server's
closed-loop cells that are comparable (``decide.comparability``), with the
interval of that median.
"""

from __future__ import annotations

import statistics

from serverbench import files
from serverbench.decide.comparability import cell_of_records, why_not_comparable
from serverbench.record.model import CellRecord, load_record
from serverbench.record.vocabulary import Status
from serverbench.tables import estimates

CAPACITY_SCHEMA = "serverbench.capacity/1"


def capacity(records: list[CellRecord], excluded: set[str], confidence: float, seed: int) -> dict:
    """The server's capacity from its closed-loop cells (records of every repeat)."""
    groups: dict[tuple, list[CellRecord]] = {}
    for record in records:
        groups.setdefault((record.cell.tool, record.cell.concurrency), []).append(record)
    candidates = []
    for (tool, concurrency), group in sorted(groups.items()):
        rps = [r.load.requests_per_s for r in group if r.status == Status.OK and r.load]
        candidates.append(
            {
                "tool": tool,
                "concurrency": concurrency,
                "repeats_ok": len(rps),
                "median_rps": statistics.median(rps) if rps else None,
                "rps": rps,
                "why_not": why_not_comparable(cell_of_records(group), excluded),
            }
        )
    usable = [c for c in candidates if not c["why_not"] and c["median_rps"]]
    out = {"schema": CAPACITY_SCHEMA, "candidates": [{k: v for k, v in c.items() if k != "rps"} for c in candidates]}
    if not usable:
        why = "; ".join(f"c={c['concurrency']} ({', '.join(c['why_not'])})" for c in candidates) or "no cell"
        return {**out, "status": Status.NOT_MEASURED, "reason": f"no comparable closed-loop cell: {why}"}
    best = max(usable, key=lambda c: c["median_rps"])
    low, high = estimates.median_ci(best["rps"], confidence, seed)
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
    files.write_json(out, measured)
    return measured
