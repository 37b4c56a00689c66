"""Capacity at a p99 objective, as a record: the open-loop ``Step``s a search offered and what
held its capacity (``Limit``). Shared by the lenses that measure it (``cell.objective``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Limit(StrEnum):
    """What held a point's capacity at the objective (or why it has none)."""

    OBJECTIVE = "objective"  # the p99 objective: more offered load missed it
    NEVER_MET = "never met"  # not even the lowest rate offered met the objective
    OFFERED = "offered"  # no rate offered missed it (the search offered no more)


@dataclass(frozen=True)
class Step:
    """One open-loop run: the rate offered, what came of it, and whether p99 met the objective
    (no failed request, and p99 of the answers within it)."""

    offered_rps: float
    duration_s: float
    achieved_rps: float | None
    requests: int | None
    failed: int
    p99_ms: float | None
    met: bool
    pss_bytes: int | None  # the server tree's PSS late in the run
    raw_header: str  # the line in the raw file before this run's output
