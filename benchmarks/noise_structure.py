"""What the default run's uncertainty is made of, read from finished runs.

1. **Are cells measured close in time alike?** Each cell's full-speed figure
   (the p95 of its own windows) as a residual from its server's median over
   the run's rounds; for every two cells of a run, half the squared
   difference of their residuals against the time between their starts (a
   variogram). If the machine's slow phases lasted tens of seconds, cells
   close in time would differ less, and measuring a comparison's two cells
   next to each other would pay; a flat variogram says each cell's noise is
   its own.
2. **Are the intervals the right width?** For every comparison of the same
   servers in several runs (A/A, planted variant, same-server and family
   pairs), the log ratio and its standard error as the run computes it
   (``serverbench.decide.fullspeed``: pooled p95, rounds resampled): the A/A
   pair's z = log ratio / se (near 0 with an rms near 1 when the errors are
   right), and the spread of a pair's log ratio between runs against its
   median error inside a run (above 1: the runs differ by more than each run
   knows, a run-to-run component).

    .venv/bin/python benchmarks/noise_structure.py RESULTS [RESULTS ...]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from serverbench.decide import fullspeed

KINDS = ("A/A", "variant", "same server", "family")
GAPS_S = [0, 5, 10, 20, 40, 80, 160, 320, 640, 3600]


def cell_levels(results: Path) -> pd.DataFrame:
    """Every measured cell's start time and log full-speed figure, from its record."""
    rows = []
    for path in sorted((results / "cells").glob("*/*/*/*/c*/r*.json")):
        record = json.loads(path.read_text())
        windows = record.get("windows") or {}
        if record.get("status") != "ok" or not windows.get("full_speed_rps"):
            continue
        cell = record["cell"]
        rows.append({"server": cell["server"], "concurrency": cell["concurrency"], "started": record["timing"]["start"],
                     "level": math.log(windows["full_speed_rps"])})  # fmt: skip
    return pd.DataFrame(rows)


def variogram(runs: list[Path]) -> pd.DataFrame:
    pairs = []
    for results in runs:
        cells = cell_levels(results)
        if len(cells) < 2:
            continue
        residual = cells["level"] - cells.groupby(["server", "concurrency"])["level"].transform("median")
        first, second = np.triu_indices(len(cells), 1)
        started, residual = cells["started"].to_numpy(), residual.to_numpy()
        pairs.append(pd.DataFrame({"gap_s": np.abs(started[first] - started[second]),
                                   "semivariance": (residual[first] - residual[second]) ** 2 / 2}))  # fmt: skip
    table = pd.concat(pairs, ignore_index=True)
    table["apart"] = pd.cut(table["gap_s"], GAPS_S)
    return table.groupby("apart", observed=True)["semivariance"].agg(["size", "median", "mean"])


def comparisons(results: Path, spec: dict) -> list[dict]:
    """The run's comparisons of KINDS with their full-speed log ratio and error."""
    verdicts = pd.read_csv(results / "verdicts.csv")
    verdicts = verdicts[verdicts["kind"].isin(KINDS) & verdicts["ratio"].notna()]
    cells = fullspeed.windows_by_cell(pd.read_csv(results / "windows.csv"), spec)
    rows = []
    for v in verdicts.itertuples():
        servers = next((found for key, found in cells.items() if key[-1] == v.concurrency), {})
        if v.a not in servers or v.b not in servers:
            continue
        found = fullspeed.estimate(servers[v.a], servers[v.b], spec["quantile"])
        if found is not None:
            rows.append({"run": results.name, "kind": v.kind, "pair": f"{v.a}/{v.b}", "c": v.concurrency,
                         "log_ratio": found.log_ratio, "se": found.se})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args()
    spec = {"quantile": 0.95, "stall_level": 0.3}
    with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
        print("Half the squared difference of two cells' log full-speed residuals, by seconds apart:")
        print(variogram(args.results).to_string())
        table = pd.DataFrame([row for results in args.results for row in comparisons(results, spec)])
        same = table[table["kind"] == "A/A"]
        z = same["log_ratio"] / same["se"]
        listed = ", ".join(f"{value:.2f}" for value in z)
        print(f"\nA/A z over {len(z)} conditions: {listed}; rms {math.sqrt((z**2).mean()):.2f}")
        spread = table.groupby(["kind", "pair", "c"]).agg(
            runs=("log_ratio", "size"), mean_ratio=("log_ratio", lambda s: math.exp(s.mean())),
            between_runs_sd=("log_ratio", "std"), inside_run_se=("se", "median"),
        )  # fmt: skip
        spread["between / inside"] = spread["between_runs_sd"] / spread["inside_run_se"]
        print("\nEach pair's log ratio between runs against its error inside a run:")
        print(spread.to_string())


if __name__ == "__main__":
    main()
