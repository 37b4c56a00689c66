"""A rate cell (open loop at a fraction of its server's capacity): its plan read
from the capacity file before it starts, and after the load what it achieved."""

from __future__ import annotations

import math

from serverbench import files
from serverbench.cell.errors import CellSkipped
from serverbench.plan.rates import plan
from serverbench.record.model import LoadResult


def rate_plan(capacity_path, fraction: float, spec: dict) -> dict:
    """A rate cell's plan from its server's capacity file; skipped where there is no capacity."""
    measured = files.read_json(capacity_path)
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
