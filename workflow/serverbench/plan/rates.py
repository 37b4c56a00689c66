"""The plan of a rate cell (latency under load): what it offers, and for how long.

A rate cell offers ``fraction`` × its server's measured capacity at a constant
rate, long enough for ``open_loop.tail_samples`` answers above p99.9, within
the profile's min and max duration.
"""

from __future__ import annotations

import math

DEFAULT_KNEE_MULTIPLE = 3.0  # the schema's default of open_loop.knee_p99_multiple


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


def knee_multiples(config: dict) -> dict[str, float]:
    """Each profile's knee bound (open_loop.knee_p99_multiple), for the tables and the chart."""
    return {
        name: (profile.get("open_loop") or {}).get("knee_p99_multiple", DEFAULT_KNEE_MULTIPLE)
        for name, profile in config["profiles"].items()
    }
