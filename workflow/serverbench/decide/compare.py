"""``serverbench compare A B``: two result sets (before and after an upgrade,
two machines, two configurations) cell by cell.

Cells are matched by their conditions (profile, workload, tool, server,
concurrency). For each: the ratio of median req/s B/A with its bootstrap
interval, a Mann-Whitney test, Holm's correction across all matched cells,
and a verdict (``faster``, ``slower``, ``no detectable difference``, ``not
comparable`` with why). Differences between the two environments are printed,
never hidden. ``--fail-above 5%`` exits 1 when some cell is significantly
slower in B by more than 5%, so it can guard a CI pipeline.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from serverbench import REPO_ROOT
from serverbench.decide import stats
from serverbench.decide.comparability import why_not_comparable
from serverbench.plan import config as cfg

MATCH = ["profile", "workload", "tool", "server", "concurrency"]
COLUMNS = [
    *MATCH,
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "verdict",
    "why",
]
ENVIRONMENT_KEYS = [
    "kernel",
    "cpu_model",
    "cpus",
    "memory_bytes",
    "serverbench",
    "git_commit",
    "config_sha256",
    "harness_python",
]


def read_set(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """runs.csv, summary.csv and environment.json of a result set (its directory)."""
    path = Path(path)
    if not (path / "runs.csv").exists():
        raise SystemExit(f"serverbench compare: {path} has no runs.csv (is it a results directory?)")
    environment = path / "environment.json"
    return (
        pd.read_csv(path / "runs.csv"),
        pd.read_csv(path / "summary.csv"),
        json.loads(environment.read_text()) if environment.exists() else {},
    )


def _excluded_because(summary: pd.DataFrame, key: tuple, excluded: set[str]) -> list[str]:
    rows = summary[(summary[MATCH] == pd.Series(key, index=MATCH)).all(axis=1)]
    return why_not_comparable(rows.iloc[0], excluded) if len(rows) else ["not measured"]


def compare_sets(a: tuple, b: tuple, excluded: set[str], confidence: float, seed: int) -> pd.DataFrame:
    """One row per cell measured in both sets."""
    (runs_a, summary_a, _), (runs_b, summary_b, _) = a, b
    good_a = runs_a[runs_a["status"] == "ok"].groupby(MATCH)["rps"].apply(list)
    good_b = runs_b[runs_b["status"] == "ok"].groupby(MATCH)["rps"].apply(list)
    keys = sorted(
        set(map(tuple, runs_a[MATCH].drop_duplicates().to_numpy()))
        & set(map(tuple, runs_b[MATCH].drop_duplicates().to_numpy()))
    )
    rows = []
    for key in keys:
        row = dict(zip(MATCH, key, strict=True))
        why = [f"A: {r}" for r in _excluded_because(summary_a, key, excluded)]
        why += [f"B: {r}" for r in _excluded_because(summary_b, key, excluded)]
        if why:
            rows.append({**row, "verdict": "not comparable", "why": "; ".join(why)})
            continue
        result = stats.compare(good_b.get(key, []), good_a.get(key, []), confidence, seed)
        rows.append({**row, "n_a": result.n_b, "n_b": result.n_a, "median_a": result.median_b,
                     "median_b": result.median_a, "ratio": result.ratio, "ci_low": result.ci_low,
                     "ci_high": result.ci_high, "p_value": result.p_value})  # fmt: skip
    for row, adjusted in zip(rows, stats.holm([row.get("p_value") for row in rows]), strict=True):
        row["p_holm"] = adjusted
        if row.get("verdict") != "not comparable":
            row["verdict"] = stats.verdict(row["ratio"], row["ci_low"], row["ci_high"], adjusted, 1 - confidence)
    return pd.DataFrame(rows, columns=COLUMNS)


def environment_differences(env_a: dict, env_b: dict) -> list[str]:
    keys = ENVIRONMENT_KEYS + sorted(
        {f"versions.{k}" for k in {**env_a.get("versions", {}), **env_b.get("versions", {})}}
    )

    def get(env, key):
        return env.get("versions", {}).get(key[9:]) if key.startswith("versions.") else env.get(key)

    return [
        f"{key}: A {get(env_a, key)!r}, B {get(env_b, key)!r}" for key in keys if get(env_a, key) != get(env_b, key)
    ]


def render(table: pd.DataFrame, form: str) -> str:
    if form == "csv":
        return table.to_csv(index=False)
    shown = table.copy()
    for column in ("ratio", "ci_low", "ci_high"):
        shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    shown["p_holm"] = shown["p_holm"].map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
    columns = [*MATCH, "ratio", "ci_low", "ci_high", "p_holm", "verdict", "why"]
    if form == "markdown":
        lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
        lines += [
            "| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |" for row in shown[columns].to_numpy()
        ]
        return "\n".join(lines) + "\n"
    return shown[columns].fillna("").to_string(index=False) + "\n"


def regressions(table: pd.DataFrame, fail_above: float) -> pd.DataFrame:
    """Cells significantly slower in B by more than ``fail_above`` (a share, 0.05 for 5%)."""
    return table[(table["verdict"] == "slower") & (table["ratio"] < 1 - fail_above)]


def _share(text: str) -> float:
    return float(text.rstrip("%")) / 100 if text.endswith("%") else float(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="serverbench compare", description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="the baseline result set (a results directory)")
    parser.add_argument("b", type=Path, help="the result set compared with it")
    parser.add_argument("--format", choices=["table", "csv", "markdown"], default="table")
    parser.add_argument("--fail-above", type=_share, default=None, metavar="SHARE", help="e.g. 5%% or 0.05")
    parser.add_argument("--config", type=Path, default=REPO_ROOT / "config.yaml", help="whose comparisons section")
    args = parser.parse_args(argv)
    config = cfg.load(args.config)
    spec = config["comparisons"]
    a, b = read_set(args.a), read_set(args.b)
    table = compare_sets(a, b, set(spec["not_comparable_flags"]), spec["confidence"], config["seed"])
    differences = environment_differences(a[2], b[2])
    out = sys.stdout
    if differences and args.format != "csv":
        out.write("Environments differ:\n" + "".join(f"  {line}\n" for line in differences) + "\n")
    out.write(render(table, args.format))
    if args.fail_above is not None:
        worse = regressions(table, args.fail_above)
        if len(worse):
            sys.stderr.write(f"serverbench compare: {len(worse)} cell(s) slower by more than {args.fail_above:.0%}\n")
            return 1
    return 0
