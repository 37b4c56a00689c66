"""The full-speed estimate: how fast a server answers when the machine runs at
full speed, from the windows of its cells (``serverbench.cell.windows``).

On a shared virtual machine each CPU runs at full speed or at a half to two
thirds of it, in episodes of tens of ms to seconds; a trial's mean req/s is an
unknown mix of the two, and that mix is most of a run's variance. A server's
full-speed figure is an upper quantile (``full_speed.quantile``, 0.9) of its
windows' req/s *pooled over its rounds*: the upper windows are the ones at
full speed, and pooling lets a trial that fell wholly into a slow episode
count as the few windows it is.

The ratio of two servers' figures gets its interval by resampling whole
rounds (both servers' windows of a drawn round together, so what a round
shares cancels and what differs between rounds and server starts stays in):
the bootstrap's standard error of the log ratio, widened by sqrt(n/(n-1)) for
its small-sample bias, with a t distribution of n - 1 degrees of freedom, so
the interval can be drawn at any Holm level like the rounds model's.

It must not be fooled by a server slow in phases of its own (a GC, worker
recycling, an autoscaler, a stall): its upper windows would be its bursts. The
machine's episodes hit the servers of a round alike on average, so a cell
whose share of windows near its own top is far below its round-mates' is
*phased*: it is compared on its delivered req/s instead, with the reason.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from serverbench.decide.inference import Estimate

DRAWS = 1000
CONDITION = ["profile", "workload", "tool", "concurrency"]


@dataclass
class CellWindows:
    """One cell's windows' req/s by round, its pooled figure and near-top share."""

    rounds: dict[int, np.ndarray]
    full_speed: float
    near_top_share: float


def cell_windows(frame: pd.DataFrame, spec: dict) -> CellWindows | None:
    """A cell's windows (rows of windows.csv) pooled; None without any."""
    rates = frame["rps"].to_numpy(dtype=float)
    if len(rates) < 2:
        return None
    rounds = {int(r): group["rps"].to_numpy(dtype=float) for r, group in frame.groupby("repeat")}
    top = float(np.quantile(rates, spec["quantile"]))
    share = float(np.mean(rates >= (1 - spec["near_top"]) * top)) if top > 0 else 0.0
    return CellWindows(rounds, top, share)


def windows_by_cell(windows: pd.DataFrame | None, spec: dict) -> dict[tuple, dict[str, CellWindows]]:
    """Per condition, each server's pooled windows."""
    out: dict[tuple, dict[str, CellWindows]] = {}
    if windows is None or windows.empty:
        return out
    for key, frame in windows.groupby([*CONDITION, "server"], sort=False):
        found = cell_windows(frame, spec)
        if found is not None:
            out.setdefault(tuple(key[:-1]), {})[key[-1]] = found
    return out


def phased(cells: dict[str, CellWindows], spec: dict) -> dict[str, str]:
    """The cells slow in phases of their own, each with its reason: a near-top share
    under ``phased_ratio`` × the median of its round-mates' at the same condition."""
    found = {}
    for server, cell in cells.items():
        mates = [other.near_top_share for name, other in cells.items() if name != server]
        if not mates:
            continue
        typical = statistics.median(mates)
        if cell.near_top_share < spec["phased_ratio"] * typical:
            found[server] = (
                f"phased: {cell.near_top_share:.0%} of its windows near its top against its round-mates'"
                f" {typical:.0%} (slow in phases of its own): compared on delivered req/s"
            )
    return found


def _pooled_log_quantile(rounds: list[np.ndarray], quantile: float) -> float:
    return math.log(np.quantile(np.concatenate(rounds), quantile))


def estimate(a: CellWindows, b: CellWindows, quantile: float, seed: int = 0) -> Estimate | None:
    """The log ratio of a's and b's full-speed figures over the rounds both have, its
    standard error from resampling whole rounds; None under two shared rounds."""
    shared = sorted(set(a.rounds) & set(b.rounds))
    if len(shared) < 2:
        return None
    rounds_a, rounds_b = [a.rounds[r] for r in shared], [b.rounds[r] for r in shared]
    if min(np.quantile(np.concatenate(rounds_a), quantile), np.quantile(np.concatenate(rounds_b), quantile)) <= 0:
        return None
    log_ratio = _pooled_log_quantile(rounds_a, quantile) - _pooled_log_quantile(rounds_b, quantile)
    rng = np.random.default_rng(seed)
    n = len(shared)
    draws = np.empty(DRAWS)
    for i, picked in enumerate(rng.integers(0, n, size=(DRAWS, n))):
        draws[i] = _pooled_log_quantile([rounds_a[j] for j in picked], quantile) - _pooled_log_quantile(
            [rounds_b[j] for j in picked], quantile
        )
    se = float(np.std(draws, ddof=1)) * math.sqrt(n / (n - 1))
    df = float(n - 1)
    p_value = float(2 * stats.t.sf(abs(log_ratio) / se, df)) if se > 0 else float(log_ratio == 0)
    method = f"full speed (p{quantile * 100:g} of windows, rounds resampled)"
    return Estimate(method, n, n, log_ratio, p_value, se if se > 0 else 1e-12, df)
