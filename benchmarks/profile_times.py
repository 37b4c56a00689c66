"""Each profile run whole on this host, timed: its recorded time (docs/data/profile-times.yaml),
which `serverbench docs` writes into the README and docs/configuration.md's "time here".

    .venv/bin/python benchmarks/profile_times.py low high:duration=10 sweep:duration=3,concurrency=[100,1000]
    .venv/bin/python benchmarks/profile_times.py --write low high:duration=10   # records them, rewrites the docs
    .venv/bin/python benchmarks/profile_times.py --write --keep-tables apps  # and keeps apps-summary.csv, …

A profile may carry overrides after a colon (the shortening is stated in the
table). One profile at a time, each into its own results directory under
``--out``; the wall time is the workflow's whole run (rule `all`: every lens's
tables, the page and its screenshots), as a user's `snakemake --cores 4` is. Prints Markdown.
``--write`` records beside each time where its jobs spent it (``spent``: the seconds of the
cells, the conformance probes and each lens's jobs, from their records; what `serverbench plan`
estimates).
"""

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml
from reproducibility import head_commit
from serverbench.drive import docsfigures, preview

REPO = Path(__file__).resolve().parents[1]
PROFILE_DATA = REPO / "docs" / "data" / "profile-times.yaml"
SPENT_DATA = "profile-spent.csv"  # the docs' figures of where a run's time went, from PROFILE_DATA


def parse(spec: str) -> tuple[str, list[str]]:
    """ "sweep:duration=3,concurrency=[100,1000]" → ("sweep", ["duration=3", "concurrency=[100,1000]"])."""
    name, _, rest = spec.partition(":")
    return name, [item for item in re.split(r",(?![^\[]*\])", rest) if item]


def run(name: str, overrides: list[str], out: Path) -> dict:
    results = out / name
    argv = [sys.executable, "-m", "snakemake", "--cores", "4", "--config", f"profile={name}", f"results={results}",
            *overrides]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - started
    (out / f"{name}.log").write_text(done.stdout + done.stderr)
    row = {"profile": name, "overrides": " ".join(overrides) or "none", "exit": done.returncode, "wall_min": wall / 60}
    if results.is_dir():
        row["spent"], row["phases"] = preview.spent(results), preview.cell_phases(results)
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


def spent_table(data: dict) -> pd.DataFrame:
    """Where each recorded profile's time went, a row per part: the sum of each kind of job's
    seconds (``spent``) and the median of each cell phase (``phases``), as the docs quote them."""
    rows = [
        {"profile": profile, "part": part, "statistic": statistic, "seconds": seconds}
        for profile, entry in data.items()
        for key, statistic in (("spent", "sum of jobs"), ("phases", "median cell"))
        for part, seconds in (entry.get(key) or {}).items()
    ]
    return pd.DataFrame(rows, columns=["profile", "part", "statistic", "seconds"])


def keep_tables(profile: str, results: Path) -> None:
    """A profile run's summary.csv and verdicts.csv kept unedited as PROFILE-summary.csv and
    PROFILE-verdicts.csv, which a doc's tables and figures quote (your-app.md the apps run's)."""
    docsfigures.keep_all({f"{profile}-{name}": pd.read_csv(results / name) for name in ("summary.csv", "verdicts.csv")})


def record(rows: list[dict], commit: str) -> None:
    """Each timed profile's time into docs/data/profile-times.yaml, then every doc that quotes
    it rewritten from there (serverbench docs)."""
    data = yaml.safe_load(PROFILE_DATA.read_text())
    day = time.strftime("%Y-%m-%d")
    for row in rows:
        shortened = "" if row["overrides"] == "none" else f", shortened: `{row['overrides']}`"
        seconds = round(row["wall_min"] * 60)
        figure = f"{seconds // 60} min {seconds % 60:02d} s{shortened} ({day}, {commit})"
        data[row["profile"]] = {"seconds": seconds, "figure": figure, "spent": row.get("spent", {}),
                                "phases": row.get("phases", {})}  # fmt: skip
        if row["overrides"] != "none":  # a fact as a field: plan and list read it, not the figure's words
            data[row["profile"]]["shortened"] = row["overrides"].split()
    header = "".join(line + "\n" for line in PROFILE_DATA.read_text().splitlines() if line.startswith("#"))
    PROFILE_DATA.write_text(header + yaml.safe_dump(data, sort_keys=False, width=100))
    docsfigures.profile_times.cache_clear()  # the docs' times are read from the file just written
    docsfigures.keep(SPENT_DATA, spent_table(data))  # and every doc rendered again, as `serverbench docs` does


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+", help="NAME or NAME:key=value,key=value")
    parser.add_argument("--out", type=Path, default=Path("/tmp/serverbench-profile-times"))
    parser.add_argument("--write", action="store_true", help="record the times in docs/data and rewrite the docs")
    parser.add_argument("--keep-tables", action="store_true", help="with --write: keep each run's summary and verdicts")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [run(*parse(spec), args.out) for spec in args.profiles]
    print(markdown(rows))
    finished = [row for row in rows if row["exit"] == 0]
    if args.write and finished:
        record(finished, head_commit())
        for row in finished if args.keep_tables else []:
            keep_tables(row["profile"], args.out / row["profile"])
    for row in rows:
        if args.write and row["exit"] != 0:  # a run that failed is no profile's time
            print(f"not recorded: {row['profile']} exited {row['exit']} ({args.out / row['profile']}.log)")
    return max(row["exit"] for row in rows)


if __name__ == "__main__":
    sys.exit(main())
