"""What a run under load showed, from the client's outcomes (``cell.reloads.Outcome``) and the
samples of the server's process tree: the restarts (process ids first seen after the first
sample), what the client saw around each and between them, each second's figures, and the
memory the server kept per answer. Pure: the same outcomes and samples give the same figures."""

from __future__ import annotations

import numpy as np
from scipy import stats

from serverbench.cell import reloads
from serverbench.lenses.recycle.record import Restart

MIN_LEAK_SAMPLES = 20  # fewer samples before the first restart (a second at 0.05 s) give no slope
# Bounded: the largest process rises at less than this share of a never-recycled worker's rate
# (a leak recycled away rises not at all; one a recycling never reaches at the full rate).
BOUNDED_SHARE = 0.25
MIN_SECONDS = 4  # fewer whole seconds of load give no rise


def restarts(samples: list[list], outcomes: list, origin: float, window_s: float) -> list[Restart]:
    """Every process that left the server's tree while it served (a worker recycled: it is
    seen, then gone), at the middle of the two samples around its exit; the client's failures
    sent within ``window_s`` of that moment. Exits, not new ids: a server may fork its workers
    after its port accepts, and those are no restarts."""
    moments: list[tuple[int, float]] = []
    for (t0, _, _, before), (t1, _, _, after) in zip(samples, samples[1:], strict=False):
        for pid in sorted(set(before) - set(after), key=int):
            moments.append((int(pid), round((t0 + t1) / 2, 3)))
    failures = [o.since - origin for o in outcomes if o.kind != reloads.OK]
    found = []
    for pid, at in moments:
        failed = sum(1 for s in failures if abs(s - at) <= window_s)
        together = sum(1 for _, other in moments if abs(other - at) <= window_s)
        found.append(Restart(pid, at, failed, together))
    return found


def p99_ms(latencies: list[float]) -> float | None:
    return round(float(np.percentile(latencies, 99)) * 1000, 3) if latencies else None


def around(outcomes: list, origin: float, moments: list[float], window_s: float) -> dict:
    """p99 of the correct answers sent within ``window_s`` of a restart and of the others, and
    the failures sent away from every restart."""
    near, between, failed_between = [], [], 0
    for outcome in outcomes:
        since = outcome.since - origin
        close = any(abs(since - at) <= window_s for at in moments)
        if outcome.kind != reloads.OK:
            failed_between += not close
            continue
        (near if close else between).append(outcome.t - outcome.since)
    return {"p99_near_ms": p99_ms(near), "p99_between_ms": p99_ms(between), "failed_between": failed_between}


def per_second(outcomes: list, origin: float, load_s: float) -> list[dict]:
    """Each whole second of load: answers, failures and the p99 of the answers sent in it."""
    found = []
    for second in range(int(load_s)):
        inside = [o for o in outcomes if second <= o.since - origin < second + 1]
        answered = [o.t - o.since for o in inside if o.kind == reloads.OK]
        found.append(
            {
                "second": second,
                "answered": len(answered),
                "failed": len(inside) - len(answered),
                "p99_ms": p99_ms(answered),
            }
        )
    return found


def leak(samples: list[list], first_restart_s: float | None) -> dict:
    """The server's USS summed against its answers, over the samples before the first restart:
    the slope is what each answer kept (bytes), r² how well a line explains it."""
    usable = [s for s in samples if s[2] is not None and (first_restart_s is None or s[0] < first_restart_s)]
    if len(usable) < MIN_LEAK_SAMPLES or usable[-1][1] == usable[0][1]:
        return {"leak_bytes_per_request": None, "leak_r2": None, "leak_samples": len(usable)}
    fit = stats.linregress([s[1] for s in usable], [s[2] for s in usable])
    return {
        "leak_bytes_per_request": round(float(fit.slope), 1),
        "leak_r2": round(float(fit.rvalue**2), 4),
        "leak_samples": len(usable),
    }


def peaks(samples: list[list], leaks_bytes: int | None, limit: int | None, workers: int, load_s: float) -> dict:
    """The largest process's USS in the first and the second half of the load, and whether
    recycling bounds it: the largest process of each second, its rise per second against the
    rise a worker would show if it never restarted (``leaks_bytes`` × its share of the answers
    per second), below ``BOUNDED_SHARE`` of it; and the ceiling the limit predicts, the first
    sample's largest process plus ``limit`` answers' leak."""
    read = [(t, uss) for t, _, _, by_pid in samples for uss in by_pid.values() if uss is not None]
    found = {
        "peak_first_half_bytes": None,
        "peak_second_half_bytes": None,
        "peak_growth_share": None,
        "bounded": None,
        "ceiling_bytes": None,
    }
    if len(samples) < 2 or not read:
        return found
    middle = (samples[0][0] + samples[-1][0]) / 2
    found["peak_first_half_bytes"] = max((uss for t, uss in read if t < middle), default=None)
    found["peak_second_half_bytes"] = max((uss for t, uss in read if t >= middle), default=None)
    start = max((uss for uss in samples[0][3].values() if uss is not None), default=None)
    if start is not None and limit and leaks_bytes:
        found["ceiling_bytes"] = start + limit * leaks_bytes
    seconds = sorted({int(t) for t, _ in read if t < int(load_s)})
    answers_per_s = (samples[-1][1] - samples[0][1]) / max(samples[-1][0] - samples[0][0], 1e-9)
    if len(seconds) >= MIN_SECONDS and leaks_bytes and answers_per_s > 0:
        largest = [max(uss for t, uss in read if int(t) == second) for second in seconds]
        rise = stats.linregress(seconds, largest).slope
        share = float(rise / (leaks_bytes * answers_per_s / workers))
        found["peak_growth_share"] = round(share, 4)
        found["bounded"] = share < BOUNDED_SHARE
    return found


def most_away(samples: list[list]) -> int | None:
    """The most of the first sample's process count missing at any later sample."""
    if not samples:
        return None
    start = len(samples[0][3])
    return max(0, *(start - len(by_pid) for _, _, _, by_pid in samples))
