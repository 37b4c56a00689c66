"""Does a run on Slurm answer as a local run does? The default profile on the one-node Slurm
(scripts/one-node-slurm: each round one Slurm job), then locally right after, each into its own
results directory and timed; then their verdicts side by side (the same outcome per comparison,
reversals), and ``compare --fail-above 5%`` (speed, by the host) and ``compare --metric work
--fail-above 1%`` between them.

    .venv/bin/python benchmarks/slurm_agreement.py [--keep DIR] [--write]
    .venv/bin/python benchmarks/slurm_agreement.py --reuse SLURM LOCAL --seconds S L [--write]

``--write`` keeps two tables in docs/data, which docs/executors.md quotes (``serverbench docs``):
slurm-agreement.csv (a row per tested comparison: its condition, each run's outcome and ratio,
whether they agree) and slurm-runs.csv (a row per run: where, its seconds, its rounds and the
Slurm jobs its cells ran in, the commit).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from reproducibility import DIRECTIONS, FAIL_ABOVE, KEY, head_commit
from serverbench import REPO_ROOT
from serverbench.decide import compare
from serverbench.decide.verdicts import read_verdicts
from serverbench.drive import docsfigures
from serverbench.lenses.work import compare as compare_work
from serverbench.plan import config as cfg

ONE_NODE = REPO_ROOT / "scripts" / "one-node-slurm"
# As docs/executors.md runs it: the executor's status checks every 5 s instead of its defaults.
SLURM = ["--workflow-profile", "profiles/slurm", "--slurm-init-seconds-before-status-checks", "5",
         "--seconds-between-status-checks", "5"]  # fmt: skip
LOCAL = ["--cores", "4"]
WORK_FAIL_ABOVE = 0.01  # compare --metric work, as docs/statistics.md's CI recipe runs it


def timed_run(results: Path, options: list[str]) -> float:
    """One default run into ``results`` (its whole workflow, as a user starts it), its seconds."""
    started = time.monotonic()
    argv = [sys.executable, "-m", "snakemake", *options, "--quiet", "--config", f"results={results}"]
    subprocess.run(argv, cwd=REPO_ROOT, check=True)
    return time.monotonic() - started


def on_slurm(results: Path) -> float:
    """The default run on a one-node Slurm started for it and stopped after it."""
    subprocess.run([str(ONE_NODE), "start"], check=True)
    try:
        return timed_run(results, SLURM)
    finally:
        subprocess.run([str(ONE_NODE), "stop"], check=False)


def agreement(slurm: Path, local: Path) -> pd.DataFrame:
    """Every comparison both runs tested, each run's outcome and ratio, and whether they agree."""
    shown = ["outcome", "ratio", "ci_low", "ci_high"]
    first = read_verdicts(slurm / "verdicts.csv")[[*KEY, *shown]]
    second = read_verdicts(local / "verdicts.csv")[[*KEY, *shown]]
    both = first.merge(second, on=KEY, suffixes=("_slurm", "_local"))
    both["agree"] = both["outcome_slurm"] == both["outcome_local"]
    both["reversed"] = (
        both["outcome_slurm"].isin(DIRECTIONS)
        & both["outcome_local"].isin(DIRECTIONS)
        & (both["outcome_slurm"] != both["outcome_local"])
    )
    return both


def run_row(where: str, results: Path, seconds: float, commit: str, compared: tuple[int, str], table,
            on_work: tuple[int, str]) -> dict:  # fmt: skip
    """One run: where, its time, its cells, rounds and Slurm jobs, and the compare between the
    two (its exit, why, the range of its cells' ratios and of the drops they could have shown)."""
    runs = pd.read_csv(results / "runs.csv")
    jobs = runs["scheduler_job"].dropna().nunique() if "scheduler_job" in runs else 0
    return {"run": where, "commit": commit, "seconds": round(seconds, 1), "minutes": round(seconds / 60, 1),
            "cells": len(runs), "rounds": runs["repeat"].nunique(), "slurm_jobs": jobs,
            "compare_exit": compared[0], "compare_reason": compared[1],
            "work_compare_exit": on_work[0], "work_compare_reason": on_work[1],
            "ratio_min": table["ratio"].min(), "ratio_max": table["ratio"].max(),
            "detectable_drop_min": table["detectable_drop"].min(),
            "detectable_drop_max": table["detectable_drop"].max()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="make the two runs under this directory and keep them")
    parser.add_argument("--reuse", nargs=2, type=Path, metavar=("SLURM", "LOCAL"), help="the two runs, made")
    parser.add_argument("--seconds", nargs=2, type=float, metavar=("SLURM", "LOCAL"), help="their times (--reuse)")
    parser.add_argument("--commit", help="the commit the reused runs were made of (default: this checkout's)")
    parser.add_argument("--write", action="store_true", help="keep the tables in docs/data (serverbench docs)")
    args = parser.parse_args()
    config = cfg.load(REPO_ROOT / "config.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        base = (args.keep or Path(tmp)).resolve()
        if args.reuse:
            slurm, local = args.reuse
            seconds = args.seconds or (float("nan"), float("nan"))
        else:
            slurm, local = base / "slurm", base / "local"
            seconds = (on_slurm(slurm), timed_run(local, LOCAL))
        both = agreement(slurm, local)
        table = compare.compare_sets(compare.read_set(slurm), compare.read_set(local), config, FAIL_ABOVE, "host")
        compared = compare.exit_status(table, FAIL_ABOVE)
        commit = args.commit or head_commit()
        on_work = compare_work.exit_status(compare_work.compare_work(slurm, local, config), WORK_FAIL_ABOVE)
        runs = pd.DataFrame([run_row("slurm", slurm, seconds[0], commit, compared, table, on_work),
                             run_row("local", local, seconds[1], commit, compared, table, on_work)])  # fmt: skip
    print(runs.to_string(index=False))
    print(f"the same outcome in {int(both['agree'].sum())} of {len(both)} comparisons, "
          f"{int(both['reversed'].sum())} reversed; compare --fail-above {FAIL_ABOVE:.0%}: exit {compared[0]} "
          f"({compared[1]})")  # fmt: skip
    if args.write:
        docsfigures.keep_all({"slurm-agreement.csv": both.assign(commit=commit), "slurm-runs.csv": runs})


if __name__ == "__main__":
    main()
