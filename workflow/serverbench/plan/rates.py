"""The plan of a rate cell (latency under load): what it offers, and for how long.

A rate cell offers ``fraction`` × its server's measured capacity at a constant
rate, long enough for ``open_loop.tail_samples`` answers above p99.9, within
the profile's min and max duration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_KNEE_MULTIPLE = 3.0  # the schema's default of open_loop.knee_p99_multiple
DEFAULT_KNEE_DELTA_MS = 1.0  # the schema's default of open_loop.knee_p99_delta_ms


@dataclass(frozen=True)
class KneeBound:
    """How far p99 may rise above its value at the lowest fraction before the knee:
    ``max(multiple × base, base + delta_ms)`` (the delta keeps a sub-millisecond
    base from making a knee of a fraction of a millisecond's jitter)."""

    multiple: float = DEFAULT_KNEE_MULTIPLE
    delta_ms: float = DEFAULT_KNEE_DELTA_MS

    def of(self, base_ms: float) -> float:
        return max(self.multiple * base_ms, base_ms + self.delta_ms)

    def describe(self) -> str:
        return f"max({self.multiple:g}×, +{self.delta_ms:g} ms)"


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


def knee_bounds(config: dict) -> dict[str, KneeBound]:
    """Each profile's knee bound (open_loop.knee_p99_multiple and knee_p99_delta_ms)."""
    bounds = {}
    for name, profile in config["profiles"].items():
        spec = profile.get("open_loop") or {}
        bounds[name] = KneeBound(
            spec.get("knee_p99_multiple", DEFAULT_KNEE_MULTIPLE), spec.get("knee_p99_delta_ms", DEFAULT_KNEE_DELTA_MS)
        )
    return bounds
