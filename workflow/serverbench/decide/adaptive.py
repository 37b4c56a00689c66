"""Repeats set by the spread: after a cell's first ``min_repeats``, one more
repeat at a time until the confidence interval of its median req/s is within
``precision`` of the median, or ``max_repeats`` is reached.

Each decision is a file (the workflow's ``precision`` checkpoint), so each
repeat stays its own job and the DAG shows why a cell got more.
"""

from __future__ import annotations

from serverbench.plan.shapes import Profile
from serverbench.record.model import load_record
from serverbench.tables import estimates


def needs_another_repeat(record_paths: list, profile: Profile, confidence: float, seed: int) -> dict:
    """Whether a cell whose repeats are ``record_paths`` needs one more."""
    records = [load_record(path) for path in record_paths]
    rps = [r.load.requests_per_s for r in records if r.status == "ok" and r.load is not None]
    reached = estimates.relative_half_width(rps, confidence, seed)
    met = reached is not None and reached <= profile.precision
    limit = profile.max_repeats or profile.repeats
    return {
        "repeats": len(records),
        "repeats_ok": len(rps),
        "precision": profile.precision,
        "reached": reached,
        "met": met,
        "max_repeats": limit,
        "more": not met and len(records) < limit,
    }
