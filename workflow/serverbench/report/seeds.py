"""The seed studies side by side with a run: ``serverbench seeds RESULTS``, the
page's section, seeds.csv and seed_claims.csv (``decide.seeds`` builds them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from serverbench import files
from serverbench.decide import seeds as side
from serverbench.decide.verdicts import read_verdicts
from serverbench.plan import seeds as seed_data


def tables(runs_csv, summary_csv, verdicts_csv) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(side by side, claims) of a run's tables (without verdicts.csv: claims not judged in the run)."""
    studies = seed_data.load()
    runs, summary = pd.read_csv(runs_csv), pd.read_csv(summary_csv)
    verdicts = read_verdicts(verdicts_csv) if Path(verdicts_csv).exists() else pd.DataFrame()
    return side.side_by_side(studies, runs, summary), side.claim_table(studies, verdicts, set(summary["profile"]))


def write(runs_csv, summary_csv, verdicts_csv, side_csv, claims_csv) -> None:
    """The workflow's rule: seeds.csv and seed_claims.csv."""
    side_table, claims = tables(runs_csv, summary_csv, verdicts_csv)
    files.write_atomic(Path(side_csv), side_table.to_csv(index=False))
    files.write_atomic(Path(claims_csv), claims.to_csv(index=False))


def _number(value, spec: str = ",.0f") -> str:
    return "" if value is None or pd.isna(value) else format(value, spec)


def _interval(row) -> str:
    if pd.isna(row.ratio):
        return ""
    if pd.isna(row.ratio_ci_low):
        return f"{row.ratio:.2f}"
    return f"{row.ratio:.2f} [{row.ratio_ci_low:.2f}, {row.ratio_ci_high:.2f}]"


def _status(row) -> str:
    flags = row["flags"]
    return row["status"] if pd.isna(flags) or not flags else f"{row['status']} ({flags})"


def condition_blocks(side_table: pd.DataFrame) -> list[dict]:
    """One block per seed table and condition: a heading, the tau sentence and the rows."""
    blocks = []
    keys = ["seed", "table", "profile", "tool", "concurrency"]
    for (seed, table, profile, tool, concurrency), rows in side_table.groupby(keys, sort=False):
        first = rows.iloc[0]
        tau = (
            f"Kendall's tau between the two orders: {first.kendall_tau:.2f}"
            + (f" (95% CI {first.tau_ci_low:.2f} to {first.tau_ci_high:.2f})" if pd.notna(first.tau_ci_low) else "")
            if pd.notna(first.kendall_tau)
            else "Kendall's tau: fewer than two servers measured in both"
        )
        body = [
            {
                "seed server": row.seed_server,
                "server": row.server,
                "seed req/s": _number(row.seed_rps, ",.2f"),
                f"seed ratio to {first.reference.split(' (')[0]}": _number(row.seed_ratio, ".2f"),
                "seed rank": _number(row.seed_rank, ".0f"),
                "req/s here": _number(row.rps),
                "ratio here [95% CI]": _interval(row),
                "rank here": _number(row["rank"], ".0f"),
                "status": _status(row),
            }
            for _, row in rows.iterrows()
        ]
        blocks.append(
            {
                "heading": f"Seed {seed}, {table} — profile {profile}, {tool} at {concurrency} connections",
                "tau": tau,
                "rows": pd.DataFrame(body),
            }
        )
    return blocks


def markdown(side_table: pd.DataFrame, claims: pd.DataFrame) -> str:
    lines = ["# The seed studies side by side", ""]
    if side_table.empty:
        lines += ["No profile of this run re-runs a seed table (seeds/studies.yaml: `profile`).", ""]
    for block in condition_blocks(side_table):
        lines += [
            f"## {block['heading']}",
            "",
            block["tau"] + ".",
            "",
            block["rows"].to_markdown(index=False, disable_numparse=True),
            "",
        ]
    brief = side.claims_in_brief(claims)
    if not brief.empty:
        lines += [
            "## The seeds' claims",
            "",
            "In the seed: judged by its own figures. Here: by this run's verdicts.",
            "",
        ]
        shown = brief.assign(quote=brief["quote"].map(lambda q: f"“{q}”"))
        lines += [
            shown[["seed", "quote", "in_seed", "in_run", "why"]].to_markdown(index=False, disable_numparse=True),
            "",
        ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """``serverbench seeds RESULTS``: 0, or 2 where RESULTS is no results directory."""
    if not (args.results / "summary.csv").exists():
        sys.stderr.write(f"serverbench seeds: no summary.csv in {args.results}\n")
        return 2
    side_table, claims = tables(*(args.results / name for name in ("runs.csv", "summary.csv", "verdicts.csv")))
    ran = claims[claims["in_run"] != side.NOT_MEASURED]
    if not ran.empty:  # the claims this run could speak to (all of them, judged in the seeds only, otherwise)
        claims = claims[claims["claim"].isin(set(ran["claim"]))]
    if args.format == "csv":
        sys.stdout.write((claims if args.claims else side_table).to_csv(index=False))
    else:
        sys.stdout.write(markdown(side_table, claims))
    return 0
