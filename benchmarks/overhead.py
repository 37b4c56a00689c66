"""Overhead: how much wall time does the harness add around each measured run?

Runs the real workflow on a small matrix with 10 s cells and compares the
matrix's wall time with the sum of the load durations; reports per-cell cost
of start (to ready), verify, warm-up, fairness probe and stop. Target: at most
10% extra beyond load + warm-up at 10 s cells.

    .venv/bin/python benchmarks/overhead.py [--duration 10] [--servers gunicorn starman]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from serverbench import REPO_ROOT

PHASES = ["prepare", "start", "ready", "verify", "warmup", "load", "stop"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--servers", nargs="+", default=["gunicorn", "uwsgi", "starman", "plackup"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "--cores",
                "4",
                "--quiet",
                "all",
                "--config",
                f"servers=[{', '.join(args.servers)}]",
                "tools=[wrk]",
                "concurrency=[10]",
                "repeats=2",
                f"duration={args.duration:g}",
                f"results={results}",
            ],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        wall = time.monotonic() - started
        records = [json.loads(p.read_text()) for p in sorted((results / "cells").rglob("r*.json"))]
    load = sum(r["load"]["duration_s"] for r in records)
    jobs = sum(r["timing"]["job_end"] - r["timing"]["job_start"] for r in records)
    costs = {phase: [] for phase in ("start+ready", "verify", "warmup", "fairness", "stop", "prepare")}
    for r in records:
        t = r["timing"]
        costs["prepare"].append(t["start"] - t["prepare"])
        costs["start+ready"].append(t["verify"] - t["start"])
        costs["verify"].append(t["warmup"] - t["verify"])
        costs["warmup"].append(t["load"] - t["warmup"])
        costs["fairness"].append(max(0.0, t["stop"] - t["load"] - r["load"]["duration_s"]))
        costs["stop"].append(t["job_end"] - t["stop"])
    print(f"cells: {len(records)}   load: {load:.1f} s   jobs: {jobs:.1f} s   matrix wall: {wall:.1f} s")
    print(f"extra over load: jobs {100 * (jobs / load - 1):.1f}%   matrix {100 * (wall / load - 1):.1f}%")
    warm = sum(costs["warmup"])
    fair = sum(costs["fairness"])
    print(
        f"extra over load + warm-up + fairness probe (the measurement plan): "
        f"jobs {100 * (jobs / (load + warm + fair) - 1):.1f}%   matrix {100 * (wall / (load + warm + fair) - 1):.1f}%"
    )
    for phase, values in costs.items():
        print(f"  {phase:<12} median {statistics.median(values):.3f} s   max {max(values):.3f} s")


if __name__ == "__main__":
    main()
