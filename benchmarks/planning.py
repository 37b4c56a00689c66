"""Planning: how long does `snakemake -n` take for a large matrix, against plain
Snakemake planning the same number of trivial jobs?

The matrix: every catalogue server, 20 concurrency levels, wrk, ab and oha, 10
repeats (21,600 cells with 36 servers). The yardstick: a throwaway Snakefile
with one rule and as many jobs, each a file of the same shape of path, planned
by the same Snakemake in the same run. Both are timed side by side, alternating,
and the median of each is reported. Target: serverbench at most 2x plain.

    .venv/bin/python benchmarks/planning.py [--rounds 3] [--repeats 10] [--write]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml
from reproducibility import against_target, kept_when
from serverbench import REPO_ROOT
from serverbench.drive import docsfigures
from serverbench.plan import config
from serverbench.plan.matrix import cells

# docs/benchmarks.md's figures (serverbench docs): a row per round, then the medians.
DATA = REPO_ROOT / "docs" / "data" / "planning.csv"
# serverbench's planning at most this many times plain Snakemake's.
TARGET_RATIO = 2.0
CONCURRENCY = [1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 8000]
PLAIN_SNAKEFILE = """
N = {jobs}
rule all:
    input: expand("out/c{{i}}/r1.json", i=range(N))
rule job:
    output: "out/c{{i}}/r1.json"
    params: conditions=lambda wildcards: wildcards.i
    shell: "touch {{output}}"
"""


def matrix_config(results: Path, repeats: int) -> list[str]:
    return [
        "servers=all",
        "tools=[wrk, ab, oha]",
        f"concurrency=[{', '.join(map(str, CONCURRENCY))}]",
        f"repeats={repeats}",
        "rate=1000",
        f"results={results}",
    ]


def dry_run(argv: list[str], cwd: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--write", action="store_true", help=f"keep the rounds in {DATA.relative_to(REPO_ROOT)}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        overrides = matrix_config(Path(tmp) / "results", args.repeats)
        overrides_dict = {key: yaml.safe_load(value) for key, value in (item.split("=", 1) for item in overrides)}
        jobs = len(cells(config.load(REPO_ROOT / "config.yaml", overrides_dict)))
        plain_dir = Path(tmp) / "plain"
        plain_dir.mkdir()
        (plain_dir / "Snakefile").write_text(PLAIN_SNAKEFILE.format(jobs=jobs))
        snakemake = [sys.executable, "-m", "snakemake", "-n", "--quiet", "all", "--cores", "4"]
        ours, plain = [], []
        for _ in range(args.rounds):
            ours.append(dry_run([*snakemake, "--config", *overrides], REPO_ROOT))
            plain.append(dry_run(snakemake, plain_dir))
    ratio = statistics.median(ours) / statistics.median(plain)
    if args.write:
        write(jobs, ours, plain)
    print(f"jobs: {jobs}   rounds: {args.rounds} (alternating)")
    for name, times in (("serverbench", ours), ("plain", plain)):
        each = ", ".join(f"{t:.1f}" for t in times)
        print(f"{name + ' snakemake -n:':<26} median {statistics.median(times):.1f} s   ({each})")
    print(f"ratio: {ratio:.2f}   target <= {TARGET_RATIO:.2f}: {'ok' if ratio <= TARGET_RATIO else 'OUTSIDE'}")


def write(jobs: int, ours: list[float], plain: list[float]) -> None:
    """The rounds and their medians, kept for the docs, which are then written again."""

    when = kept_when()

    def row(name: str, ours_s: float, plain_s: float) -> dict:
        ratio = ours_s / plain_s
        return {"row": name, "jobs": jobs, "serverbench_s": round(ours_s, 2), "plain_s": round(plain_s, 2),
                "ratio": round(ratio, 3), "target_ratio": TARGET_RATIO,
                "verdict": against_target(ratio <= TARGET_RATIO), **when}  # fmt: skip

    rounds = [row(f"round {i}", a, b) for i, (a, b) in enumerate(zip(ours, plain, strict=True), 1)]
    median = row("median", statistics.median(ours), statistics.median(plain))
    docsfigures.keep(DATA.name, pd.DataFrame([*rounds, median]))


if __name__ == "__main__":
    main()
