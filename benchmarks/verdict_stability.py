"""Verdict stability: run the default matrix twice and count the significant
verdicts that flip between the two runs (target: under 5%), with the median
precision reached (CI half-width of the median req/s, as a share of it).

    .venv/bin/python benchmarks/verdict_stability.py [--reuse RESULTS_A RESULTS_B]
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from serverbench import REPO_ROOT

KEY = ["kind", "profile", "workload", "tool", "concurrency", "a", "b"]
DECIDED = {"faster", "slower"}


def run_matrix(results: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "4", "--quiet", "--config", f"results={results}"],
        cwd=REPO_ROOT, check=True, capture_output=True,
    )  # fmt: skip


def flips(first: pd.DataFrame, second: pd.DataFrame) -> tuple[int, int, pd.DataFrame]:
    """(verdicts significant in either run, of those the ones that differ, the differing rows)."""
    both = first.merge(second, on=KEY, suffixes=("_1", "_2"))
    significant = both[both["verdict_1"].isin(DECIDED) | both["verdict_2"].isin(DECIDED)]
    changed = significant[significant["verdict_1"] != significant["verdict_2"]]
    return len(significant), len(changed), changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuse", nargs=2, type=Path, metavar=("RESULTS_A", "RESULTS_B"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sets = args.reuse or [Path(tmp) / "a", Path(tmp) / "b"]
        if not args.reuse:
            for results in sets:
                run_matrix(results)
        verdicts = [pd.read_csv(results / "verdicts.csv") for results in sets]
        summaries = [pd.read_csv(results / "summary.csv") for results in sets]
    significant, changed, rows = flips(*verdicts)
    print(f"comparisons: {len(verdicts[0])} and {len(verdicts[1])}")
    for index, table in enumerate(verdicts, start=1):
        print(f"run {index}: " + ", ".join(f"{n} {v}" for v, n in table["verdict"].value_counts().items()))
    share = changed / significant if significant else 0.0
    print(f"significant in either run: {significant}; flipped: {changed} ({share:.1%}; target < 5%)")
    for _, row in rows.iterrows():
        print(f"  {row['kind']} {row['tool']} c={row['concurrency']} {row['a']} vs {row['b']}: "
              f"{row['verdict_1']} -> {row['verdict_2']}")  # fmt: skip
    reached = pd.concat([s["precision_reached"] for s in summaries]).dropna()
    print(f"median precision reached (CI half-width / median req/s): {reached.median():.2%} over {len(reached)} cells")


if __name__ == "__main__":
    main()
