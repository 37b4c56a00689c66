"""Do a run's answers reproduce? Several default runs (each with a new seed),
then what a user would check across them:

- per run: its seed, how many comparisons came out *faster*/*slower*,
  *equivalent*, *undetermined*, not tested or not comparable, and every tested
  comparison's outcome with its ratio and detectable ratio;
- reversals: a comparison *faster* in one run and *slower* in another (target 0);
- the A/A control's outcome in each run (never *faster* or *slower*);
- ``serverbench compare A B --fail-above 5%`` for every two runs (it must never
  exit 1: nothing changed between them);
- and for every run and every comparable server, a copy of the run with that
  server's req/s lowered by 20%, compared with the run: never passed (exit 0).

    .venv/bin/python benchmarks/reproducibility.py --runs 3 [--keep DIR]
    .venv/bin/python benchmarks/reproducibility.py --reuse RESULTS_1 RESULTS_2 RESULTS_3
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from serverbench import REPO_ROOT
from serverbench.decide import compare
from serverbench.decide.comparability import why_not_comparable
from serverbench.plan import config as cfg

KEY = ["kind", "profile", "workload", "tool", "concurrency", "a", "b"]
DIRECTIONS = {"faster", "slower"}
TESTED = DIRECTIONS | {"equivalent", "undetermined"}
SLOWDOWN = 0.8
FAIL_ABOVE = 0.05


def run_matrix(results: Path) -> None:
    """One default run, as `make bench` starts it, into its own results directory."""
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "4", "--quiet", "--config", f"results={results}"],
        cwd=REPO_ROOT, check=True,
    )  # fmt: skip


def outcome_counts(verdicts: pd.DataFrame) -> str:
    throughput = verdicts[~verdicts["kind"].str.startswith("p99")]
    counts = throughput["verdict"].value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in [*sorted(TESTED), "not tested", "not comparable"])


def tested_rows(verdicts: pd.DataFrame) -> list[str]:
    rows = verdicts[verdicts["verdict"].isin(TESTED)]
    return [
        f"  {r.kind:12} c={r.concurrency:<3} {r.a} / {r.b}: {r.verdict} {r.ratio:.3f}× "
        f"[{r.ci_low:.3f}, {r.ci_high:.3f}], could detect {r.detectable_ratio:.3f}×"
        for r in rows.itertuples()
    ]


def reversals(verdicts: list[pd.DataFrame]) -> list[str]:
    """Comparisons decided in opposite directions by two runs."""
    found = []
    for (i, first), (j, second) in itertools.combinations(enumerate(verdicts, start=1), 2):
        both = first.merge(second, on=KEY, suffixes=("_1", "_2"))
        flipped = both[both["verdict_1"].isin(DIRECTIONS) & both["verdict_2"].isin(DIRECTIONS)]
        flipped = flipped[flipped["verdict_1"] != flipped["verdict_2"]]
        found += [f"runs {i}/{j}: {r.a} / {r.b} c={r.concurrency}: {r.verdict_1} then {r.verdict_2}"
                  for r in flipped.itertuples()]  # fmt: skip
    return found


def slowed(result_set: tuple, server: str) -> tuple:
    """A copy of a result set with one server's req/s lowered by ``SLOWDOWN``."""
    runs, summary, environment = result_set
    runs, summary = runs.copy(), summary.copy()
    runs.loc[runs["server"] == server, "rps"] *= SLOWDOWN
    columns = [c for c in summary.columns if c.startswith("rps") and c != "rps_cv"]
    summary.loc[summary["server"] == server, columns] *= SLOWDOWN
    return runs, summary, environment


def compare_exit(a: tuple, b: tuple, config: dict) -> int:
    table = compare.compare_sets(a, b, config, FAIL_ABOVE)
    return compare.exit_status(table, FAIL_ABOVE)[0]


def comparable_servers(summary: pd.DataFrame, config: dict) -> list[str]:
    excluded = set(config["comparisons"]["not_comparable_flags"])
    keep = summary[[not why_not_comparable(row, excluded) for _, row in summary.iterrows()]]
    return sorted(keep["server"].unique())


def report(sets: list[Path], config: dict) -> dict:
    verdicts = [pd.read_csv(path / "verdicts.csv") for path in sets]
    loaded = [compare.read_set(path) for path in sets]
    figures: dict = {"runs": []}
    for index, (path, table, (_, _, environment)) in enumerate(zip(sets, verdicts, loaded, strict=True), start=1):
        print(f"run {index} ({path}, seed {environment.get('seed')}): {outcome_counts(table)}")
        print("\n".join(tested_rows(table)))
        control = table[table["kind"] == "A/A"]
        print("  A/A: " + "; ".join(f"c={r.concurrency} {r.verdict}" for r in control.itertuples()))
        figures["runs"].append({"path": str(path), "seed": environment.get("seed"), "outcomes": outcome_counts(table),
                                "a_a": control["verdict"].tolist()})  # fmt: skip
    figures["reversals"] = reversals(verdicts)
    print(f"reversals between any two runs: {len(figures['reversals'])} (target 0)")
    print("\n".join(f"  {line}" for line in figures["reversals"]))
    figures["a_a_directions"] = sum(v in DIRECTIONS for run in figures["runs"] for v in run["a_a"])
    print(f"A/A comparisons faster or slower: {figures['a_a_directions']} (target 0)")
    figures["compare"] = {f"{i}->{j}": compare_exit(loaded[i - 1], loaded[j - 1], config)
                          for i, j in itertools.permutations(range(1, len(sets) + 1), 2)}  # fmt: skip
    print(f"compare --fail-above {FAIL_ABOVE:.0%} between runs (exit codes; 1 would be a false alarm): "
          + ", ".join(f"{k}: {v}" for k, v in figures["compare"].items()))  # fmt: skip
    figures["slowed"] = {
        f"run {i} {server}": compare_exit(loaded[i - 1], slowed(loaded[i - 1], server), config)
        for i in range(1, len(sets) + 1)
        for server in comparable_servers(loaded[i - 1][1], config)
    }
    passed = [name for name, status in figures["slowed"].items() if status == 0]
    print(f"copies with one server {1 - SLOWDOWN:.0%} slower: {len(figures['slowed'])}; exit codes "
          + json.dumps(pd.Series(figures["slowed"]).value_counts().to_dict())
          + f"; passed with exit 0: {len(passed)} (target 0) {passed or ''}")  # fmt: skip
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="default runs to make (each with a new seed)")
    parser.add_argument("--reuse", nargs="+", type=Path, metavar="RESULTS", help="result sets already made")
    parser.add_argument("--keep", type=Path, help="make the runs under this directory and keep them")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    config = cfg.load(REPO_ROOT / "config.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        sets = args.reuse or [(args.keep or Path(tmp)) / f"run{i}" for i in range(1, args.runs + 1)]
        if not args.reuse:
            for results in sets:
                run_matrix(results.resolve())
        figures = report(sets, config)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
