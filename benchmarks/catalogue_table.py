"""The tables of docs/servers.md and docs/configuration.md from a real run: every
server's version, keep-alive class, req/s and flags, and each profile's wall time here.

    snakemake --cores 4 --config profile=smoke
    .venv/bin/python benchmarks/catalogue_table.py results

Prints Markdown. The server table is what docs/servers.md
shows; the profile times fill the "time here" column for the profiles run.
"""

import argparse
from pathlib import Path

import pandas as pd

COLUMNS = ["server", "language", "family", "version", "interpreter", "keep-alive", "req/s", "flags"]


def server_table(summary: pd.DataFrame) -> str:
    rows = ["| " + " | ".join(COLUMNS) + " |", "| --- | --- | --- | --- | --- | --- | ---: | --- |"]
    for _, row in summary.sort_values(["language", "family", "server"], na_position="last").iterrows():
        rps = f"{row['rps_trimmed_mean']:,.0f}" if pd.notna(row["rps_trimmed_mean"]) else row["status"]
        cells = [row["server"], row["language"], row["family"], row["server_version"], row["interpreter"],
                 row["keepalive"], rps, row["flags"]]  # fmt: skip
        rows.append("| " + " | ".join("" if pd.isna(c) else str(c) for c in cells) + " |")
    return "\n".join(rows)


def profile_times(runs: pd.DataFrame) -> str:
    lines = ["| profile | cells | wall time |", "| --- | ---: | ---: |"]
    for profile, group in runs.groupby("profile"):
        wall = group["job_end"].max() - group["job_start"].min()
        lines.append(f"| `{profile}` | {len(group)} | {wall / 60:.1f} min |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    args = parser.parse_args()
    summary = pd.read_csv(args.results / "summary.csv")
    runs = pd.read_csv(args.results / "runs.csv")
    print(server_table(summary))
    print()
    print(profile_times(runs))


if __name__ == "__main__":
    main()
