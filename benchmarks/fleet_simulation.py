"""A fleet on paper: where a run's cells are placed on a cluster, and what that
does to its intervals.

A cluster of N nodes (10 and 100) whose speeds differ: a node runs every
server at its own level (up to 30% apart between nodes), and each server pair
at its own ratio: a node's effect on a pair's ratio spans up to 3% between
nodes of one kind (the same instance type), or up to 30% between mixed
hardware (caches, microcode, neighbours' memory traffic: whatever makes
uwsgi-debian / starman 1.95× on one host here and 2.7× on another). The
question a run answers is the fleet's ratio: the true ratio times the geometric mean of
the nodes' effects on it. Every cell adds its own noise (``CELL_SD``, 1.7%:
the sd of one cell's full-speed level around its server's in one default run
here, server restarts included). A run has ``ROUNDS`` rounds of a pair A, B,
placed three ways:

- *round on one node* (profiles/slurm: a round is one job): each round on a
  node of its own (drawn without replacement while there are nodes enough),
  both of its cells there, so the node's level cancels in the round's ratio
  and what differs between nodes is in the spread of the rounds;
- *cells placed freely* (each cell a job of its own, as the profile was): each
  cell on any node, so a round's two cells usually ran on different nodes;
- *one node for the run*: every round on the same node (a run confined to one
  machine): precise, but about that node's ratio, not the fleet's.

Each run is decided by the product's own rounds model
(``serverbench.decide.inference.by_rounds``: log req/s = server + round, the
interval a t interval of the paired rounds) and outcome rule against the
default 2% margin, at 95%. Printed per fleet size and design: the share of
95% intervals covering the fleet's ratio (target ≥ 93%), the median
detectable ratio, the share of A/A runs (true ratio 1) deciding a direction,
and the share of runs with a 5% slower A found *slower*.

    .venv/bin/python benchmarks/fleet_simulation.py [--runs 1000] [--rounds 7] [--seed 1] [--write]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
from serverbench.decide import inference
from serverbench.drive import docsfigures

CELL_SD = 0.017
NODE_LEVEL_SPREAD = 1.3  # the fastest node runs every server up to 1.3x the slowest
RATIO_SPREADS = (1.03, 1.3)  # a pair's ratio on one node is up to this many times its ratio on another
MARGIN = 0.02
ALPHA = 0.05
DESIGNS = ("round on one node", "cells placed freely", "one node for the run")
REPO = Path(__file__).resolve().parents[1]
# docs/benchmarks.md's table and docs/executors.md's figures (serverbench docs).
DATA = REPO / "docs" / "data" / "fleet-simulation.csv"
TITLES = {"ratio_spread": "ratio spread", "coverage": "coverage of the fleet's ratio",
          "detectable": "median detectable ratio", "aa_decided": "A/A deciding a direction",
          "slower_found": "5% slower found slower"}  # fmt: skip


def fleet(rng: np.random.Generator, nodes: int, spread: float) -> tuple[np.ndarray, np.ndarray]:
    """Each node's log level (every server) and its log effect on the pair's ratio,
    split evenly between the two servers."""
    level = rng.uniform(-math.log(NODE_LEVEL_SPREAD), 0.0, nodes)
    ratio_effect = rng.uniform(-math.log(spread) / 2, math.log(spread) / 2, nodes)
    return level, ratio_effect


def placement(design: str, rng: np.random.Generator, nodes: int, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """The node of A's and of B's cell in each round."""
    if design == "round on one node":
        where = rng.choice(nodes, rounds, replace=rounds > nodes)
        return where, where
    if design == "cells placed freely":
        return rng.integers(0, nodes, rounds), rng.integers(0, nodes, rounds)
    where = np.full(rounds, rng.integers(0, nodes))
    return where, where


def one_run(rng, nodes: int, spread: float, rounds: int, design: str, true_ratio: float) -> dict:
    level, ratio_effect = fleet(rng, nodes, spread)
    node_a, node_b = placement(design, rng, nodes, rounds)
    log_a = math.log(true_ratio) + level[node_a] + ratio_effect[node_a] / 2 + rng.normal(0, CELL_SD, rounds)
    log_b = level[node_b] - ratio_effect[node_b] / 2 + rng.normal(0, CELL_SD, rounds)
    index = pd.RangeIndex(1, rounds + 1)
    found = inference.by_rounds(pd.Series(np.exp(log_a), index), pd.Series(np.exp(log_b), index))
    low, high = found.interval(ALPHA)
    fleet_ratio = true_ratio * math.exp(ratio_effect.mean())
    return {
        "covered": low <= fleet_ratio <= high,
        "detectable": found.detectable_ratio(ALPHA, MARGIN),
        "outcome": inference.outcome(low, high, MARGIN),
    }


def simulate(nodes: int, spread: float, rounds: int, runs: int, seed: int) -> pd.DataFrame:
    rows = []
    for design in DESIGNS:
        rng = np.random.default_rng(seed)
        aa = [one_run(rng, nodes, spread, rounds, design, 1.0) for _ in range(runs)]
        slower = [one_run(rng, nodes, spread, rounds, design, 1 / 1.05) for _ in range(runs)]
        both = aa + slower
        rows.append({
            "nodes": nodes,
            "ratio_spread": round(spread - 1, 4),
            "placement": design,
            "coverage": np.mean([r["covered"] for r in both]),
            "detectable": np.median([r["detectable"] for r in both]),
            "aa_decided": np.mean([r["outcome"] in (inference.FASTER, inference.SLOWER) for r in aa]),
            "slower_found": np.mean([r["outcome"] == inference.SLOWER for r in slower]),
        })  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per design and true ratio")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per run (the default profile's 7)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", action="store_true", help=f"keep the table in {DATA.relative_to(REPO)}")
    args = parser.parse_args()
    table = pd.concat([
        simulate(nodes, spread, args.rounds, args.runs, args.seed) for spread in RATIO_SPREADS for nodes in (10, 100)
    ])  # fmt: skip
    print(f"{args.runs} runs per design and ratio, {args.rounds} rounds, cell sd {CELL_SD:.1%}, margin {MARGIN:.0%}")
    if args.write:
        docsfigures.keep(DATA.name, table)
    print(table.rename(columns=TITLES).to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
