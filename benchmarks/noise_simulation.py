"""The old design against the new on a simulated noisy machine.

Servers with known ratios (1.0 — an A/A pair —, 1.1, 1.3, 2.0 against a base)
are measured on a machine whose CPU drops to half speed in seconds-long
episodes, 15–70% of the time (the share itself drifting during a run), as
this project's VMs do. Each design measures every server ``repeats`` times:

- *old*: one shuffle of every (server, repeat) job with the same seed every
  run; ratio of medians with a percentile bootstrap, Mann–Whitney, Holm, and
  faster/slower/undetermined;
- *new*: rounds (each a new random order of every server), the rounds model
  (``serverbench.decide.inference``), intervals at Holm's level, and
  faster/slower/equivalent/undetermined against a 5% margin.

The two-speed model (``--two-speed``): each CPU runs at full speed or at a
half to two thirds of it, in episodes of 50 ms to 2 s, slow 15–70% of the
time, as the AMD hosts here do; every job keeps 50 ms windows. There the
rounds model on trial means (*mean*) is set beside the full-speed estimate
(*full*: the p90 of the windows pooled over rounds, rounds resampled,
``serverbench.decide.fullspeed``), both against the run's 2% margin, with a
server 1.03× faster among the true ratios.

It prints, per design and ratio: the share of runs deciding a direction (at
1.0 that is the false-verdict rate, target ≤ 5%), the share deciding the wrong
one, the coverage of the 95% interval per repeat count (target ≥ 93%), and the
reversal rate between two replicate runs (target 0).

    .venv/bin/python benchmarks/noise_simulation.py [--runs 400] [--repeats 3 5 7] [--write]

``--write`` keeps what it prints in docs/data (seeded: every run with the same options writes the
same), which docs/benchmarks.md quotes (``serverbench docs``): noise-simulation.csv (a row per
design, repeat count and server: decided, wrong, covered, equivalent, reversal) and
noise-simulation-checks.csv (``compare``'s exit shares per factor, the planted knee's coverage).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from serverbench import REPO_ROOT
from serverbench.decide import compare, fullspeed, inference, stats
from serverbench.drive import docsfigures
from serverbench.plan import config as cfg
from serverbench.plan.rates import KneeBound
from serverbench.tables import knees

STEP = 0.1  # seconds per step of the machine's speed trace
JOB_SECONDS = (1.0, 2.0, 2.0)  # warm-up, measured load, start and stop: a job of the default profile
SLOW_SPEED = 0.5
EPISODE_SECONDS = 2.0
RATIOS = {"base": 1.0, "alias": 1.0, "x1.1": 1.1, "x1.3": 1.3, "x2.0": 2.0}
MARGIN = 0.05
ALPHA = 0.05


@dataclass
class Machine:
    """A CPU whose speed halves in episodes; the slow share wanders between 15% and 70%."""

    rng: np.random.Generator

    def trace(self, seconds: float) -> np.ndarray:
        steps = int(seconds / STEP) + 1
        share = np.clip(self.rng.uniform(0.15, 0.7) + np.cumsum(self.rng.normal(0, 0.01, steps)), 0.15, 0.7)
        leave_slow = STEP / EPISODE_SECONDS
        enter_slow = leave_slow * share / (1 - share)
        slow = np.empty(steps, dtype=bool)
        slow[0] = self.rng.random() < share[0]
        draws = self.rng.random(steps)
        for i in range(1, steps):
            slow[i] = draws[i] >= leave_slow if slow[i - 1] else draws[i] < enter_slow[i]
        return np.where(slow, SLOW_SPEED, 1.0)


def measure(order: list[tuple[str, int]], machine: Machine, base_rps: float = 10_000.0) -> pd.DataFrame:
    """Run the jobs in ``order`` on one machine trace: req/s = true rate × the mean speed
    over the measured seconds × a small jitter."""
    warmup, load, overhead = JOB_SECONDS
    job = warmup + load + overhead
    speed = machine.trace(job * len(order))
    rows = []
    for position, (server, repeat) in enumerate(order):
        start = int((position * job + warmup) / STEP)
        window = speed[start : start + int(load / STEP)]
        jitter = math.exp(machine.rng.normal(0, 0.02))
        rows.append((server, repeat, base_rps * RATIOS[server] * float(window.mean()) * jitter))
    return pd.DataFrame(rows, columns=["server", "round", "rps"])


WINDOW = 0.05  # seconds: the two-speed machine's step and the windows' length
TWO_SPEED_RATIOS = {"base": 1.0, "alias": 1.0, "x1.03": 1.03, "x1.1": 1.1, "x1.3": 1.3}
FULL_SPEC = {
    "decides": True,
    "window_s": WINDOW,
    "quantile": 0.95,
    "near_top": 0.1,
    "stall_level": 0.3,
    "stall_excess": 0.1,
}
TWO_SPEED_MARGIN = 0.02


@dataclass
class TwoSpeedMachine:
    """Full speed, or a half to two thirds of it, in episodes of 50 ms to 2 s; slow 15–70% of the time."""

    rng: np.random.Generator

    def trace(self, seconds: float) -> np.ndarray:
        steps, speed, t = int(seconds / WINDOW) + 1, [], 0
        share = self.rng.uniform(0.15, 0.7)
        slow = self.rng.random() < share
        while t < steps:
            mean = self.rng.uniform(0.05, 2.0) / WINDOW
            length = max(1, int(self.rng.exponential(mean if slow else mean * (1 - share) / share)))
            level = self.rng.uniform(0.5, 0.67) if slow else 1.0
            speed += [level] * length
            t, slow = t + length, not slow
        return np.asarray(speed[:steps])


def measure_windows(order: list[tuple[str, int]], machine, base_rps: float = 10_000.0) -> pd.DataFrame:
    """Each job's 50 ms windows on one machine trace: rate × speed × 2% jitter."""
    warmup, load, overhead = JOB_SECONDS
    job = warmup + load + overhead
    speed = machine.trace(job * len(order))
    frames = []
    for position, (server, repeat) in enumerate(order):
        start = int((position * job + warmup) / WINDOW)
        window = speed[start : start + int(load / WINDOW)]
        rps = base_rps * TWO_SPEED_RATIOS[server] * window * np.exp(machine.rng.normal(0, 0.02, len(window)))
        frames.append(pd.DataFrame({"server": server, "round": repeat, "rps": rps}))
    return pd.concat(frames, ignore_index=True)


def two_speed_verdicts(windows: pd.DataFrame, design: str) -> pd.DataFrame:
    """*mean*: the rounds model on each trial's mean; *full*: the full-speed estimate."""
    if design == "mean":
        means = windows.groupby(["server", "round"])["rps"].mean().reset_index()
        by_server = {s: g.set_index("round")["rps"] for s, g in means.groupby("server")}
        estimates = [(s, inference.estimate(by_server[s], by_server["base"])) for s in TWO_SPEED_RATIOS if s != "base"]
    else:
        cells = {s: fullspeed.cell_windows(g.rename(columns={"round": "repeat"}), FULL_SPEC)
                 for s, g in windows.groupby("server")}  # fmt: skip
        estimates = [(s, fullspeed.estimate(cells[s], cells["base"], FULL_SPEC["quantile"]))
                     for s in TWO_SPEED_RATIOS if s != "base"]  # fmt: skip
    _, levels = inference.holm_levels([e.p_value for _, e in estimates], ALPHA)
    rows = []
    for (server, estimate), level in zip(estimates, levels, strict=True):
        low95, high95 = estimate.interval(ALPHA)
        outcome = inference.outcome(*estimate.interval(level), TWO_SPEED_MARGIN)
        rows.append((server, estimate.ratio, low95, high95, outcome))
    return pd.DataFrame(rows, columns=["server", "ratio", "low95", "high95", "outcome"])


def old_order(repeats: int) -> list[tuple[str, int]]:
    jobs = [(server, repeat) for server in RATIOS for repeat in range(1, repeats + 1)]
    np.random.default_rng(20261122).shuffle(jobs)  # the same seed every run
    return jobs


def rounds_order(repeats: int, rng: np.random.Generator, ratios: dict = RATIOS) -> list[tuple[str, int]]:
    order = []
    for round_ in range(1, repeats + 1):
        servers = list(ratios)
        rng.shuffle(servers)
        order += [(server, round_) for server in servers]
    return order


def old_verdicts(data: pd.DataFrame) -> pd.DataFrame:
    rps = data.groupby("server")["rps"].apply(list)
    rows = [(s, stats.compare(rps[s], rps["base"], 1 - ALPHA, 1)) for s in RATIOS if s != "base"]
    adjusted = stats.holm([c.p_value for _, c in rows])
    return pd.DataFrame(
        [(s, c.ratio, c.ci_low, c.ci_high, stats.verdict(c.ci_low, c.ci_high, p, ALPHA))
         for (s, c), p in zip(rows, adjusted, strict=True)],
        columns=["server", "ratio", "low95", "high95", "outcome"],
    )  # fmt: skip


def new_verdicts(data: pd.DataFrame) -> pd.DataFrame:
    by_server = {s: g.set_index("round")["rps"] for s, g in data.groupby("server")}
    estimates = [(s, inference.estimate(by_server[s], by_server["base"])) for s in RATIOS if s != "base"]
    _, levels = inference.holm_levels([e.p_value for _, e in estimates], ALPHA)
    rows = []
    for (server, estimate), level in zip(estimates, levels, strict=True):
        low95, high95 = estimate.interval(ALPHA)
        outcome = inference.outcome(*estimate.interval(level), MARGIN)
        rows.append((server, estimate.ratio, low95, high95, outcome))
    return pd.DataFrame(rows, columns=["server", "ratio", "low95", "high95", "outcome"])


def simulate(design: str, repeats: int, runs: int, seed: int) -> pd.DataFrame:
    """``runs`` replicate pairs of runs; one row per (pair, run, server)."""
    rng = np.random.default_rng(seed)
    frames = []
    for pair in range(runs):
        for replicate in (1, 2):
            machine = Machine(rng)
            if design == "old":
                table = old_verdicts(measure(old_order(repeats), machine))
            elif design in ("mean", "full"):
                order = rounds_order(repeats, rng, TWO_SPEED_RATIOS)
                table = two_speed_verdicts(measure_windows(order, TwoSpeedMachine(rng)), design)
            else:
                table = new_verdicts(measure(rounds_order(repeats, rng), machine))
            frames.append(table.assign(pair=pair, replicate=replicate, repeats=repeats, design=design))
    return pd.concat(frames, ignore_index=True)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Per design, repeats and true ratio: decided, wrong, coverage, reversals."""
    true = results["server"].map({**RATIOS, **TWO_SPEED_RATIOS})
    decided = results["outcome"].isin(["faster", "slower"])
    results = results.assign(
        true=true,
        decided=decided,
        wrong=((true > 1) & (results["outcome"] == "slower")) | ((true == 1) & decided),
        covered=(results["low95"] <= true) & (true <= results["high95"]),
        equivalent=results["outcome"] == "equivalent",
    )  # fmt: skip
    first, second = (
        results[results["replicate"] == r].set_index(["design", "repeats", "pair", "server"]) for r in (1, 2)
    )
    reversed_ = first["outcome"].isin(["faster", "slower"]) & second["outcome"].isin(["faster", "slower"])
    reversed_ &= first["outcome"] != second["outcome"]
    reversal = reversed_.groupby(["design", "repeats", "server"]).mean().rename("reversal")
    keys = ["design", "repeats", "server"]
    table = results.groupby(keys)[["decided", "wrong", "covered", "equivalent"]].mean().join(reversal)
    return table.reset_index()


# serverbench compare on simulated pairs of runs: every server of each run shifted by its own
# factor exp(N(0, RUN_SD)) — the drift between runs hours apart — on top of noisy repeats in rounds.
RUN_SD = 0.1
COMPARE_SERVERS = {"nginx-baseline": 40_000.0, "a": 20_000.0, "b": 15_000.0, "c": 9_000.0, "d": 3_500.0}


def simulated_run(rng: np.random.Generator, repeats: int = 7, slower: str | None = None, factor: float = 1.0):
    """(runs, summary, environment) of one simulated run at two conditions."""
    rows = []
    for concurrency in (2, 20):
        drift = rng.normal(0, 0.05, repeats)  # a round's speed, shared by every server in it
        for server, rps in COMPARE_SERVERS.items():
            level = rps * math.exp(rng.normal(0, RUN_SD)) * (factor if server == slower else 1.0)
            noise = rng.normal(0, 0.08, repeats)
            for repeat in range(1, repeats + 1):
                value = level * math.exp(drift[repeat - 1] + noise[repeat - 1])
                rows.append(("default", "hello", "wrk", server, concurrency, repeat, "ok", value))
    runs = pd.DataFrame(
        rows, columns=["profile", "workload", "tool", "server", "concurrency", "repeat", "status", "rps"]
    )
    keys = ["profile", "workload", "tool", "server", "concurrency"]
    summary = runs.drop_duplicates(keys)[keys].assign(status="ok", reason=None, flags="", repeats_ok=repeats)
    return runs, summary, {}


def compare_exits(config: dict, pairs: int, seed: int, factor: float = 1.0) -> pd.Series:
    """Exit statuses of ``--fail-above 5%`` over ``pairs`` simulated pairs of runs (B's
    server "a" slowed by ``factor``)."""
    rng = np.random.default_rng(seed)
    statuses = []
    for _ in range(pairs):
        before, after = simulated_run(rng), simulated_run(rng, slower="a", factor=factor)
        table = compare.compare_sets(before, after, config, 0.05)
        statuses.append(compare.exit_status(table, 0.05)[0])
    # Every status compare can give a judgement with (0 within, 1 worse, 3 cannot tell), a share each.
    return pd.Series(statuses).value_counts(normalize=True).reindex([0, 1, 3], fill_value=0.0)


# A planted knee: p99 flat at BASE_MS up to KNEE_AT of capacity, then rising steeply; every
# repeat's p99 noisy (lognormal, sd KNEE_NOISE), one repeat in ten hit by a stall (x4).
KNEE_FRACTIONS = (0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1)
KNEE_AT, BASE_MS, KNEE_NOISE = 0.74, 2.0, 0.25


def planted_latency(rng: np.random.Generator, repeats: int = 3, capacity: float = 1000.0) -> pd.DataFrame:
    rows = []
    for fraction in KNEE_FRACTIONS:
        for repeat in range(1, repeats + 1):
            true = BASE_MS * (1 + max(0.0, fraction - KNEE_AT) * 60)
            p99 = true * math.exp(rng.normal(0, KNEE_NOISE)) * (4 if rng.random() < 0.1 else 1)
            rows.append({"fraction": fraction, "repeat": repeat, "status": "ok", "latency_p99_ms": p99, "flags": "",
                         "offered_rps": fraction * capacity, "capacity_rps": capacity, "capacity_ci_low": None,
                         "capacity_ci_high": None, "reason": None})  # fmt: skip
    return pd.DataFrame(rows)


def planted_knee_rps(bound: KneeBound, capacity: float = 1000.0) -> float:
    """Where the planted p99 curve crosses the bound (in req/s)."""
    return (KNEE_AT + (bound.of(BASE_MS) / BASE_MS - 1) / 60) * capacity


def knee_coverage(cases: int, seed: int, bound: KneeBound | None = None) -> dict:
    """How often the knee's interval holds the planted knee, and how often a knee is found."""
    bound = bound or KneeBound()
    rng = np.random.default_rng(seed)
    planted, held, found = planted_knee_rps(bound), 0, 0
    for case in range(cases):
        result = knees.knee(planted_latency(rng), bound, 0.95, seed + case)
        found += result["knee_rps"] is not None
        low, high = result["knee_ci_low"], result["knee_ci_high"]
        held += low is not None and low <= planted and (high is None or planted <= high)
    return {"cases": cases, "planted_rps": planted, "covered": held / cases, "found": found / cases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="replicate pairs of runs per design and repeat count")
    parser.add_argument("--repeats", type=int, nargs="+", default=[3, 5, 7])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compare-pairs", type=int, default=1000, help="simulated pairs of runs for compare")
    parser.add_argument("--knee-cases", type=int, default=500, help="simulated servers with a planted knee")
    parser.add_argument("--two-speed", action="store_true", help="only the two-speed model: mean against full speed")
    parser.add_argument("--write", action="store_true", help="keep the tables in docs/data (serverbench docs)")
    args = parser.parse_args()
    designs = ("mean", "full") if args.two_speed else ("old", "new", "mean", "full")
    frames = [simulate(design, n, args.runs, args.seed) for design in designs for n in args.repeats]
    table = summarise(pd.concat(frames, ignore_index=True))
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
    if args.two_speed:
        return
    config = cfg.load(REPO_ROOT / "config.yaml")
    checks = []
    for factor in (1.0, 0.8):
        exits = compare_exits(config, args.compare_pairs, args.seed, factor)
        shares = ", ".join(f"exit {code}: {share:.1%}" for code, share in sorted(exits.items()))
        print(f"compare --fail-above 5%, runs shifted by sd {RUN_SD}, server a x{factor}: {shares}")
        checks += [{"check": "compare", "factor": factor, "exit": code, "share": share, "cases": args.compare_pairs}
                   for code, share in sorted(exits.items())]  # fmt: skip
    coverage = knee_coverage(args.knee_cases, args.seed)
    print(f"planted knee at {coverage['planted_rps']:.0f} req/s: interval holds it in {coverage['covered']:.1%}"
          f" of {coverage['cases']} cases")  # fmt: skip
    checks.append({"check": "knee", "planted_rps": coverage["planted_rps"], "share": coverage["covered"],
                   "cases": coverage["cases"]})  # fmt: skip
    if args.write:
        docsfigures.keep_all({"noise-simulation.csv": table.round(4),
                              "noise-simulation-checks.csv": pd.DataFrame(checks).round(4)})  # fmt: skip


if __name__ == "__main__":
    main()
