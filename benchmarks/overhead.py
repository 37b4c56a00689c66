"""Overhead: how much wall time does the harness add around each measured run?

Runs the real workflow on a small matrix with 10 s cells (16 by default) and
compares the wall time of the measurement (every cell and the tables; each
server's conformance probes before it and the charts after it are timed
apart) with the sum of the load durations;
reports per-cell cost
of start (to ready), verify, warm-up, what follows the load (an h2load
fairness probe where `fairness: h2load`; fairness read from the sockets
costs no phase) and stop. Target: at most 10% extra at 10 s cells, the
warm-up counted as load (it is the tool's load, unmeasured).

    .venv/bin/python benchmarks/overhead.py [--duration 10] [--servers gunicorn starman]
        [--concurrency 10 100] [--repeats 2] [--write]

``--write`` keeps the figures in docs/data/overhead.csv (one row), which docs/benchmarks.md quotes.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from reproducibility import against_target, kept_when
from serverbench import REPO_ROOT
from serverbench.drive import docsfigures

DATA = REPO_ROOT / "docs" / "data" / "overhead.csv"
# The measurement's wall time at most this share over its load and warm-up.
TARGET_EXTRA = 0.10
PHASES = ["prepare", "start", "ready", "verify", "warmup", "load", "stop"]


def snakemake(targets: list[str], config: list[str]) -> float:
    """Wall seconds of one workflow run to ``targets``."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "snakemake", *targets, "--cores", "4", "--quiet", "--config", *config],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--servers", nargs="+", default=["gunicorn", "uwsgi", "starman", "plackup"])
    parser.add_argument("--concurrency", nargs="+", type=int, default=[10, 100])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--write", action="store_true", help=f"keep the figures in {DATA.relative_to(REPO_ROOT)}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        matrix = [
            f"servers=[{', '.join(args.servers)}]",
            "tools=[wrk]",
            f"concurrency=[{', '.join(map(str, args.concurrency))}]",
            f"repeats={args.repeats}",
            f"duration={args.duration:g}",
            f"results={results}",
        ]
        # Each server's conformance probes first (a lens of their own, which every cell waits
        # for), then the measurement (every cell and the runs/summary tables), then the charts
        # and index on top: probes and reporting are timed apart.
        probes = snakemake([str(results / "conformance" / "default" / f"{s}.json") for s in args.servers], matrix)
        wall = snakemake(["collect"], matrix)
        charts = snakemake(["all"], matrix)
        records = [json.loads(p.read_text()) for p in sorted((results / "cells").rglob("r*.json"))]
    load = sum(r["load"]["duration_s"] for r in records)
    jobs = sum(r["timing"]["job_end"] - r["timing"]["job_start"] for r in records)
    costs = {phase: [] for phase in ("prepare", "start+ready", "verify", "warmup", "after load", "stop")}
    for r in records:
        t = r["timing"]
        costs["prepare"].append(t["start"] - t["prepare"])
        costs["start+ready"].append(t["verify"] - t["start"])
        costs["verify"].append(t["warmup"] - t["verify"])
        costs["warmup"].append(t["load"] - t["warmup"])
        costs["after load"].append(max(0.0, t["stop"] - t["load"] - r["load"]["duration_s"]))
        costs["stop"].append(t["job_end"] - t["stop"])
    print(f"cells: {len(records)}   load: {load:.1f} s   jobs: {jobs:.1f} s   matrix wall: {wall:.1f} s")
    print(f"conformance probes before: {probes:.1f} s   charts and index afterwards: {charts:.1f} s")
    print(f"extra over load: jobs {100 * (jobs / load - 1):.1f}%   matrix {100 * (wall / load - 1):.1f}%")
    warm = sum(costs["warmup"])
    print(
        f"extra over load + warm-up: jobs {100 * (jobs / (load + warm) - 1):.1f}%   "
        f"matrix {100 * (wall / (load + warm) - 1):.1f}%"
    )
    for phase, values in costs.items():
        print(f"  {phase:<12} median {statistics.median(values):.3f} s   max {max(values):.3f} s")
    if args.write:
        row = {"cells": len(records), "duration_s": args.duration, "load_s": load, "warmup_s": warm, "jobs_s": jobs,
               "matrix_s": wall, "probes_s": probes, "charts_s": charts, "extra_jobs": jobs / (load + warm) - 1,
               "extra_matrix": wall / (load + warm) - 1, "target_extra": TARGET_EXTRA}  # fmt: skip
        row |= {"verdict": against_target(row["extra_matrix"] <= TARGET_EXTRA), **kept_when()}
        for phase, values in costs.items():
            row[f"{phase.replace(' ', '_').replace('+', '_')}_median_s"] = statistics.median(values)
        docsfigures.keep(DATA.name, pd.DataFrame([row]).round(4))


if __name__ == "__main__":
    main()
