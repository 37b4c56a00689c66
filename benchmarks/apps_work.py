"""Each app's work per request under each server: the apps profile's work jobs alone (no timed
cell), for the workloads named (hello and fortunes by default: a job per server and workload, and
all four would take about an hour here), as docs/your-app.md runs them:

    snakemake DIR/work.csv --cores 4 --config profile=apps 'work=[hello,fortunes]' results=DIR

    .venv/bin/python benchmarks/apps_work.py [--workloads hello fortunes] [--keep DIR] [--write]
    .venv/bin/python benchmarks/apps_work.py --reuse RESULTS --seconds S [--commit C] [--write]

``--write`` keeps docs/data/apps-work.csv (the run's work.csv, unedited, with the commit it was
made of, the run's seconds and ``of_fewest``: a server's instructions over the fewest of its
language for the same app and workload), which docs/your-app.md's work table and figures quote
(``serverbench docs``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from reproducibility import head_commit
from serverbench import REPO_ROOT
from serverbench.drive import docsfigures

KEPT = "apps-work.csv"


def run(results: Path, workloads: list[str]) -> float:
    """The apps profile's work jobs for ``workloads`` into ``results``, their seconds."""
    names = ",".join(workloads)
    # The target first: --quiet and --config would take it as theirs.
    argv = [sys.executable, "-m", "snakemake", str(results / "work.csv"), "--cores", "4", "--quiet", "--config",
            "profile=apps", f"work=[{names}]", f"results={results}"]  # fmt: skip
    started = time.monotonic()
    subprocess.run(argv, cwd=REPO_ROOT, check=True)
    return time.monotonic() - started


def kept(results: Path, seconds: float, commit: str) -> pd.DataFrame:
    """The run's work.csv as it is, with what made it and each server's instructions as a multiple
    of the fewest any server of its language needed for the same app and workload."""
    work = pd.read_csv(results / "work.csv")
    fewest = work.groupby(["profile", "workload", "language"])["instructions_per_request"].transform("min")
    return work.assign(of_fewest=work["instructions_per_request"] / fewest, commit=commit, run_seconds=round(seconds))


def summary(work: pd.DataFrame) -> str:
    """Thousands of instructions per request, app and workload by server, as a reader checks it."""
    table = work.pivot_table(index=["profile", "workload"], columns="server", values="instructions_per_request")
    return (table / 1000).round(1).to_string()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=["hello", "fortunes"])
    parser.add_argument("--keep", type=Path, help="make the run under this directory and keep it")
    parser.add_argument("--reuse", type=Path, metavar="RESULTS", help="a run already made")
    parser.add_argument("--seconds", type=float, help="the reused run's seconds")
    parser.add_argument("--commit", help="the commit the reused run was made of (default: this checkout's)")
    parser.add_argument("--write", action="store_true", help="keep the table in docs/data (serverbench docs)")
    args = parser.parse_args()
    if args.reuse:
        if args.seconds is None:
            parser.error("--reuse needs --seconds (the run's time is part of what is kept)")
        results, seconds = args.reuse, args.seconds
    else:
        base = args.keep or Path(tempfile.mkdtemp(prefix="apps-work-"))
        results = base / "apps-work"
        seconds = run(results, args.workloads)
    work = kept(results, seconds, args.commit or head_commit())
    print(summary(work))
    print(f"{len(work)} work jobs in {seconds / 60:.1f} min; not ok: {(work['status'] != 'ok').sum()}")
    if args.write:
        docsfigures.keep(KEPT, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
