"""The full-speed estimate: how fast a server answers when the machine runs at
full speed, from the windows of its cells (``serverbench.cell.windows``).

On a shared virtual machine each CPU runs at full speed or at a half to two
thirds of it, in episodes of tens of ms to seconds; a trial's mean req/s is an
unknown mix of the two, and that mix is most of a run's variance. A server's
full-speed figure is an upper quantile (``full_speed.quantile``, 0.95) of its
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
machine's episodes slow a CPU to a half or two thirds, never to a standstill,
and they hit the servers of a round alike on average; a server's own pauses
leave windows with (almost) no answers. So a cell whose share of windows
under ``stall_level`` (0.3) of its own top exceeds its round-mates' (the
median at its condition) by more than ``stall_excess`` (0.1) is *phased*: it
is compared on its delivered req/s instead, with the reason. (The share of
windows *near* the top was tried first and does not tell: on a noisy host it
differs between servers by their speed — 27–31% for nginx and uWSGI against
44% typical in one default run — as much as a server pausing 40% of the time
lowers it.)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from serverbench.decide.inference import Estimate
from serverbench.tables.columns import CONDITION

DRAWS = 1000


@dataclass
class CellWindows:
    """One cell's windows' req/s by round, its pooled figure and its share of (almost) answerless windows."""

    rounds: dict[int, np.ndarray]
    full_speed: float
    stalled_share: float = 0.0


def cell_windows(frame: pd.DataFrame, spec: dict) -> CellWindows | None:
    """A cell's windows (rows of windows.csv) pooled; None without any."""
    rates = frame["rps"].to_numpy(dtype=float)
    if len(rates) < 2:
        return None
    rounds = {int(r): group["rps"].to_numpy(dtype=float) for r, group in frame.groupby("repeat")}
    top = float(np.quantile(rates, spec["quantile"]))
    stalled = float(np.mean(rates < spec["stall_level"] * top)) if top > 0 else 1.0
    return CellWindows(rounds, top, stalled)


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
    """The cells slow in phases of their own, each with its reason: a share of (almost)
    answerless windows more than ``stall_excess`` above the median of its round-mates'."""
    found = {}
    for server, cell in cells.items():
        mates = [other.stalled_share for name, other in cells.items() if name != server]
        if not mates:
            continue
        typical = statistics.median(mates)
        if cell.stalled_share > typical + spec["stall_excess"]:
            found[server] = (
                f"phased: {cell.stalled_share:.0%} of its windows under {spec['stall_level']:.0%} of its top"
                f" against its round-mates' {typical:.0%} (slow in phases of its own): compared on delivered req/s"
            )
    return found


def _pooled_log_quantile(rounds: list[np.ndarray], quantile: float | Callable) -> float:
    pooled = np.concatenate(rounds)
    return math.log(quantile(pooled) if callable(quantile) else np.quantile(pooled, quantile))


def estimate(a: CellWindows, b: CellWindows, quantile: float | Callable, seed: int = 0) -> Estimate | None:
    """The log ratio of a's and b's full-speed figures over the rounds both have, its
    standard error from resampling whole rounds; None under two shared rounds.
    ``quantile``: of the pooled windows, or any statistic of them (benchmarks/full_speed_choice.py)."""
    shared = sorted(set(a.rounds) & set(b.rounds))
    if len(shared) < 2:
        return None
    rounds_a, rounds_b = [a.rounds[r] for r in shared], [b.rounds[r] for r in shared]
    pooled_a, pooled_b = np.concatenate(rounds_a), np.concatenate(rounds_b)
    if min(np.max(pooled_a), np.max(pooled_b)) <= 0:
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
    named = "a statistic" if callable(quantile) else f"p{quantile * 100:g}"
    method = f"full speed ({named} of windows, rounds resampled)"
    return Estimate(method, n, n, log_ratio, p_value, se if se > 0 else 1e-12, df)


def level(cell: CellWindows, quantile: float, seed: int = 0) -> tuple[float, float, int]:
    """One cell's log full-speed figure, its standard error from resampling its rounds, and
    its number of rounds (what ``compare`` needs to set one run's figure against another's)."""
    rounds = list(cell.rounds.values())
    n = len(rounds)
    log_level = _pooled_log_quantile(rounds, quantile)
    if n < 2:
        return log_level, math.inf, n
    rng = np.random.default_rng(seed)
    draws = [_pooled_log_quantile([rounds[j] for j in picked], quantile) for picked in rng.integers(0, n, (DRAWS, n))]
    return log_level, float(np.std(draws, ddof=1)) * math.sqrt(n / (n - 1)), n
