"""The run in short windows: answers completed in each window of at most
``full_speed.window_s`` (50 ms), each with its *measured* duration, from the
client's own sockets (the bytes each received, read over sock_diag by the
connection sampler; every answer of a workload has one size).

Why windows: on a shared virtual machine a CPU runs at full speed or much
slower in episodes of tens of ms to seconds, so a trial's mean req/s averages
an unknown mix of two speeds, and that mix is most of the variance. The upper
windows of a trial are the server at the machine's full speed; an upper
quantile of them (pooled over the rounds at decide time) estimates it.
Durations are measured, never assumed: with an assumed window length the
timer's jitter swamps the quantiles.
"""

from __future__ import annotations

import numpy as np

from serverbench.record.sections import LoadResult, Windows

CONNECTED_SHARE = 0.9  # windows between snapshots holding this share of the most connections seen


def window_rates(durations_s, answers) -> np.ndarray:
    """Answers per second of each window."""
    return np.asarray(answers, dtype=float) / np.asarray(durations_s, dtype=float)


def near_top_share(rates: np.ndarray, top: float, near: float) -> float | None:
    """The share of windows within ``near`` (a fraction) of ``top``."""
    if not len(rates) or not top:
        return None
    return float(np.mean(rates >= (1 - near) * top))


def windows(snapshots: list[tuple[float, dict[str, int]]], load: LoadResult, spec: dict) -> Windows | None:
    """The run's windows from the sampler's snapshots, or None where nothing can be said
    (no answers, too few snapshots: the sampler did not run or the run was too short)."""
    if len(snapshots) < 3 or not load.requests or not load.transfer_bytes:
        return None
    most = max(len(sockets) for _, sockets in snapshots)
    full = [(taken, sockets) for taken, sockets in snapshots if most and len(sockets) >= CONNECTED_SHARE * most]
    bytes_per_answer = load.transfer_bytes / load.requests
    durations, answers = [], []
    for (t0, before), (t1, after) in zip(full, full[1:], strict=False):
        # A socket new since the last snapshot received all its bytes inside the window.
        received = sum(max(0, count - before.get(key, 0)) for key, count in after.items())
        durations.append(round(t1 - t0, 6))
        answers.append(round(received / bytes_per_answer, 2))
    if len(durations) < 2:
        return Windows(status="too short", reason=f"{len(full)} snapshots with the connections open")
    rates = window_rates(durations, answers)
    top = float(np.quantile(rates, spec["quantile"]))
    # Answers in fewer windows than the quantile's share leave a top of 0: no share near it.
    share = near_top_share(rates, top, spec["near_top"])
    return Windows(
        status="ok",
        source="sock_diag",
        window_s=spec["window_s"],
        quantile=spec["quantile"],
        bytes_per_answer=round(bytes_per_answer, 3),
        full_speed_rps=round(top, 2),
        near_top_share=None if share is None else round(share, 4),
        durations_s=durations,
        answers=answers,
    )
