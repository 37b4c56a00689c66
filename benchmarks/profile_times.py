"""Each profile run whole on this host, timed: the profile table's "time here" (docs/configuration.md).

    .venv/bin/python benchmarks/profile_times.py low high:duration=10 sweep:duration=3,concurrency=[100,1000]
    .venv/bin/python benchmarks/profile_times.py --write low high:duration=10   # rewrites the table's rows

A profile may carry overrides after a colon (the shortening is stated in the
table). One profile at a time, each into its own results directory under
``--out``; the wall time is the workflow's, from start to its last output
(the tables, verdicts and the seed side by side). Prints Markdown.
"""

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
PROFILE_TABLE = REPO / "docs" / "configuration.md"
TARGETS = ("summary.csv", "verdicts.csv", "seeds.csv", "seed_claims.csv")


def parse(spec: str) -> tuple[str, list[str]]:
    """ "sweep:duration=3,concurrency=[100,1000]" → ("sweep", ["duration=3", "concurrency=[100,1000]"])."""
    name, _, rest = spec.partition(":")
    return name, [item for item in re.split(r",(?![^\[]*\])", rest) if item]


def run(name: str, overrides: list[str], out: Path) -> dict:
    results = out / name
    argv = [sys.executable, "-m", "snakemake", "--cores", "4", *(str(results / t) for t in TARGETS),
            "--config", f"profile={name}", f"results={results}", *overrides]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - started
    (out / f"{name}.log").write_text(done.stdout + done.stderr)
    row = {"profile": name, "overrides": " ".join(overrides) or "none", "exit": done.returncode, "wall_min": wall / 60}
    if (results / "summary.csv").exists():
        summary = pd.read_csv(results / "summary.csv")
        row.update(cells=len(summary), failed=", ".join(summary[summary["status"] == "failed"]["server"]) or "none")
    return row


def markdown(rows: list[dict]) -> str:
    lines = [
        "| profile | shortened by | cells | wall time | failed cells | exit |",
        "| --- | --- | ---: | ---: | --- | ---: |",
    ]
    for row in rows:
        lines.append(f"| `{row['profile']}` | {row['overrides']} | {row.get('cells', '')} | {row['wall_min']:.1f} min"
                     f" | {row.get('failed', '')} | {row['exit']} |")  # fmt: skip
    return "\n".join(lines)


def rewrite_table(rows: list[dict]) -> None:
    """The last column of the profile table, for the profiles timed."""
    text = PROFILE_TABLE.read_text().splitlines()
    for row in rows:
        shortened = "" if row["overrides"] == "none" else f", shortened: `{row['overrides']}`"
        for index, line in enumerate(text):
            if line.startswith(f"| `{row['profile']}` |"):
                cells = line.rstrip(" |").split(" | ")
                cells[-1] = f"{row['wall_min']:.1f} min{shortened}"
                text[index] = " | ".join(cells) + " |"
    PROFILE_TABLE.write_text("\n".join(text) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+", help="NAME or NAME:key=value,key=value")
    parser.add_argument("--out", type=Path, default=Path("/tmp/serverbench-profile-times"))
    parser.add_argument("--write", action="store_true", help="write the times into docs/configuration.md")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [run(*parse(spec), args.out) for spec in args.profiles]
    print(markdown(rows))
    if args.write:
        rewrite_table(rows)
    return max(row["exit"] for row in rows)


if __name__ == "__main__":
    sys.exit(main())
