"""Would measuring two servers *alternately*, in slots of 100 ms, let a run see
3%? The default run measures each cell for 2 s in turn, so two servers of a
comparison are seconds apart and a slow episode of the machine falls on one
and not the other. Here the servers of a comparison are all up at once and
the load switches between them every ``--slot`` seconds, so neighbouring
slots share the machine's speed.

Three gunicorn-gthread servers as the default profile has them (2 workers, 1
thread, pinned to CPU 0; the hello app): the A/A pair and the planted 5%
variant (``SERVERBENCH_EXTRA_SHARE=0.05``). Every round starts them anew,
warms each for 1 s (the variant calibrates itself then), and measures them
two ways, interleaved so both see the same machine:

- **in turn** (today's design): each server 2 s of ``wrk -t1 -c2`` on CPU 1,
  in a random order, read in 50 ms windows; the product's full-speed
  estimate (p95 of the windows pooled over rounds, rounds resampled:
  ``serverbench.decide.fullspeed.estimate``);
- **alternating**: one wrk per server started at once and stopped
  (SIGSTOP); cycles in which each server in a random order gets one slot
  (SIGCONT, ``--settle`` s unmeasured while the connections refill, the rest
  measured, SIGSTOP), until each has had 2 s. Estimates: the same pooled p95
  of its slots, and the paired one (per cycle the log ratio of the two
  slots, averaged over the cycles where both ran within 15% of their top).

Throughput is loopback bytes over each window's measured duration (one
client loads at a time). Printed per design and pair: the ratio, its
standard error from resampling whole rounds, and the detectable ratio the
default run's rule would give it (2% margin, the A/A pair's Holm level 0.05/9,
t with rounds - 1 degrees of freedom). Idle CPUs are held polling
(/dev/cpu_dma_latency 0) as in every cell. Run it alone on the machine.

    .venv/bin/python benchmarks/alternation.py [--rounds 7] [--slot 0.1] [--seed 7] [--keep] [--json out.json]
    .venv/bin/python benchmarks/alternation.py --analyse out.json --per-run 7   # its rounds as runs of 7
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
from scipy import stats
from serverbench import REPO_ROOT
from serverbench.decide.fullspeed import CellWindows, estimate
from start_effect import loopback_bytes, loopback_windows  # benchmarks/ is on the path of a script run from it

SERVERS = {"plain": "0", "again": "0", "plus5": "0.05"}
PAIRS = (("again", "plain"), ("plus5", "plain"))
TRIAL_S, NEAR_TOP = 2.0, 0.85
MARGIN, LEVEL, POWER = 0.02, 0.05 / 9, 0.8
GUNICORN = Path(os.environ.get("VIRTUAL_ENV", REPO_ROOT / ".venv")) / "bin" / "gunicorn"


def wrk(port: int, seconds: str) -> list[str]:
    return ["taskset", "-c", "1", "wrk", "-t1", "-c2", f"-d{seconds}", "--timeout", "30s", f"http://127.0.0.1:{port}/"]


def start(port: int, share: str) -> subprocess.Popen:
    server = subprocess.Popen(
        ["taskset", "-c", "0", str(GUNICORN), "--bind", f"127.0.0.1:{port}", "--workers", "2",
         "--worker-class", "gthread", "--threads", "1", "--keep-alive", "5",
         "--chdir", str(REPO_ROOT / "apps" / "python"), "hello:application"],
        env=dict(os.environ, SERVERBENCH_EXTRA_SHARE=share),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return server


def stop(servers: list[subprocess.Popen]) -> None:
    for server in servers:
        server.send_signal(signal.SIGTERM)
    for server in servers:
        server.wait()


def in_turn(port: int) -> np.ndarray:
    """One 2 s trial's windows' rates (the first and last 2 windows left out)."""
    load = subprocess.Popen(wrk(port, "2s"), stdout=subprocess.DEVNULL)
    return np.asarray(loopback_windows(load)[2:-2])


def serving_processes(port: int) -> int:
    """How many server processes hold the established connections to ``port`` (with 2
    connections and 2 workers: 1 when both landed on one worker)."""
    shown = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    return len(set(re.findall(r"pid=(\d+)", shown)))


def alternating(ports: dict[str, int], slot: float, settle: float, rng: random.Random) -> dict[str, list[float]]:
    """Each server's slot rates, cycle by cycle (index i of every list: cycle i), and under
    ``workers:NAME`` how many of its processes hold its connections."""
    loads = {name: subprocess.Popen(wrk(port, "3600s"), stdout=subprocess.DEVNULL) for name, port in ports.items()}
    time.sleep(0.3)
    for load in loads.values():
        load.send_signal(signal.SIGSTOP)
    rates: dict = {name: [] for name in ports}
    rates |= {f"workers:{name}": serving_processes(port) for name, port in ports.items()}
    try:
        for _ in range(round(TRIAL_S / slot)):
            for name in rng.sample(list(ports), len(ports)):
                loads[name].send_signal(signal.SIGCONT)
                time.sleep(settle)
                before, then = loopback_bytes(), time.perf_counter()
                time.sleep(slot - settle)
                rates[name].append((loopback_bytes() - before) / (time.perf_counter() - then))
                loads[name].send_signal(signal.SIGSTOP)
    finally:
        for load in loads.values():
            load.send_signal(signal.SIGCONT)
            load.terminate()
            load.wait()
    return rates


PORTS = {name: 18190 + i for i, name in enumerate(SERVERS)}


def started() -> list[subprocess.Popen]:
    """The three servers, up and warmed for 1 s each (the variant calibrates itself then)."""
    servers = [start(port, SERVERS[name]) for name, port in PORTS.items()]
    time.sleep(2)
    for port in PORTS.values():
        subprocess.run(wrk(port, "1s"), capture_output=True, check=True)
    return servers


def one_round(slot: float, settle: float, rng: random.Random) -> dict:
    """Both designs, in a random order."""
    designs = ["in turn", "alternating"]
    rng.shuffle(designs)
    out = {}
    for design in designs:
        if design == "in turn":
            out[design] = {name: in_turn(PORTS[name]).tolist() for name in rng.sample(list(PORTS), len(PORTS))}
        else:
            out[design] = alternating(PORTS, slot, settle, rng)
    return out


def rounds_of(count: int, keep: bool, slot: float, settle: float, rng: random.Random) -> list[dict]:
    """``count`` rounds, the servers started anew for each (as cells are) or once (``keep``)."""
    out, servers = [], started() if keep else []
    try:
        for _ in range(count):
            if not keep:
                servers = started()
            out.append(one_round(slot, settle, rng))
            if not keep:
                stop(servers)
                servers = []
    finally:
        stop(servers)
    return out


def detectable(se: float, df: int) -> float:
    crit, power = stats.t.ppf(1 - LEVEL / 2, df), stats.t.ppf(POWER, df)
    return math.exp(math.log1p(MARGIN) + crit * se * (1 + power / crit))


def paired(rounds: list[dict], a: str, b: str, seed: int = 0) -> tuple[float, float]:
    """Mean over cycles (where both slots ran within NEAR_TOP of their top) of the slots' log
    ratio; its standard error from resampling whole rounds."""
    top_a = np.quantile(np.concatenate([r["alternating"][a] for r in rounds]), 0.95)
    top_b = np.quantile(np.concatenate([r["alternating"][b] for r in rounds]), 0.95)

    def ratios(r):
        x, y = np.asarray(r["alternating"][a]), np.asarray(r["alternating"][b])
        both = (x >= NEAR_TOP * top_a) & (y >= NEAR_TOP * top_b)
        return np.log(x[both] / y[both])

    per_round = [ratios(r) for r in rounds]
    value = float(np.mean(np.concatenate(per_round)))
    rng = np.random.default_rng(seed)
    n = len(rounds)
    draws = [np.mean(np.concatenate([per_round[j] for j in pick])) for pick in rng.integers(0, n, (1000, n))]
    return value, float(np.std(draws, ddof=1)) * math.sqrt(n / (n - 1))


def spread(rounds: list[dict], a: str, b: str) -> str:
    """Where the paired estimate's uncertainty comes from: the sd over rounds of each
    round's mean slot log ratio, against the typical standard error inside a round."""
    per_round, inside = [], []
    for r in rounds:
        x, y = np.asarray(r["alternating"][a]), np.asarray(r["alternating"][b])
        near = (x >= NEAR_TOP * np.quantile(x, 0.95)) & (y >= NEAR_TOP * np.quantile(y, 0.95))
        if near.sum() > 2:
            ratios = np.log(x[near] / y[near])
            per_round.append(ratios.mean())
            inside.append(ratios.std(ddof=1) / math.sqrt(len(ratios)))
    lone = [r["alternating"].get(f"workers:{name}") == 1 for r in rounds for name in (a, b)]
    return (f"{a}/{b}: per round sd {np.std(per_round, ddof=1):.4f}, inside a round se {np.median(inside):.4f};"
            f" rounds where one worker held both connections: {sum(lone)} of {len(lone)} cells")  # fmt: skip


def report(rounds: list[dict]) -> list[dict]:
    rows, n = [], len(rounds)
    for a, b in PAIRS:
        for design in ("in turn", "alternating"):
            cells = {name: CellWindows({i: np.asarray(r[design][name]) for i, r in enumerate(rounds)}, 0.0)
                     for name in (a, b)}  # fmt: skip
            found = estimate(cells[a], cells[b], 0.95)
            rows.append({"pair": f"{a}/{b}", "design": design, "estimator": "pooled p95",
                         "ratio": found.ratio, "se": found.se})  # fmt: skip
        value, se = paired(rounds, a, b)
        rows.append({"pair": f"{a}/{b}", "design": "alternating", "estimator": "paired slots",
                     "ratio": math.exp(value), "se": se})  # fmt: skip
    for row in rows:
        row["detectable"] = detectable(row["se"], n - 1)
        print(f"{row['pair']:12s} {row['design']:12s} {row['estimator']:13s} ratio {row['ratio']:.4f}"
              f"  se {row['se']:.4f}  detectable {row['detectable']:.3f}")  # fmt: skip
    for a, b in PAIRS:
        print(spread(rounds, a, b))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--slot", type=float, default=0.1)
    parser.add_argument("--settle", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="start the servers once, not every round")
    parser.add_argument("--json", type=Path, help="keep every window and slot here")
    parser.add_argument("--analyse", type=Path, help="a --json file to report again instead of measuring")
    parser.add_argument("--per-run", type=int, help="with --analyse: runs of this many rounds (2 at least)")
    args = parser.parse_args()
    if args.analyse:
        kept = json.loads(args.analyse.read_text())["rounds"]
        size = args.per_run or len(kept)
        for first in range(0, len(kept) - size + 1, size):
            print(f"rounds {first + 1}-{first + size}:")
            report(kept[first : first + size])
        return
    latency = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    os.write(latency, struct.pack("i", 0))
    os.sched_setaffinity(0, {1})
    rng = random.Random(args.seed)
    rounds = rounds_of(args.rounds, args.keep, args.slot, args.settle, rng)
    os.close(latency)
    rows = report(rounds)
    if args.json:
        kept = {"args": {k: str(v) for k, v in vars(args).items()}, "rounds": rounds, "rows": rows}
        args.json.write_text(json.dumps(kept))


if __name__ == "__main__":
    main()
