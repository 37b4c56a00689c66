"""Which full-speed figure, from which windows? Measured on real runs' windows.csv.

For every tested comparison of each run (verdicts.csv: same server, family,
A/A, variant, ceiling; both cells with windows), the log ratio's standard error
from resampling whole rounds (``serverbench.decide.fullspeed``) under several
statistics of the pooled windows — quantiles, the mean of the upper windows —
and two window lengths (the cell's 50 ms windows, and pairs of them merged
into 100 ms), beside the rounds model on the trials' means. The A/A pair's
ratio and the planted variant's are printed too: a smaller error that moves
the planted ratio is no gain.

    .venv/bin/python benchmarks/full_speed_choice.py RESULTS [RESULTS ...]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
from serverbench.decide import fullspeed, inference

KINDS = {"same server", "family", "A/A", "variant", "ceiling"}
STATISTICS = {
    "p75": 0.75,
    "p90": 0.9,
    "p95": 0.95,
    "p99": 0.99,
    "mean above p50": lambda x: float(np.mean(x[x >= np.quantile(x, 0.5)])),
    "median of the fast mode (>= 0.8 p95)": lambda x: float(np.median(x[x >= 0.8 * np.quantile(x, 0.95)])),
    "median of the fast mode (>= 0.85 p95)": lambda x: float(np.median(x[x >= 0.85 * np.quantile(x, 0.95)])),
    "median of the fast mode (>= 0.9 p95)": lambda x: float(np.median(x[x >= 0.9 * np.quantile(x, 0.95)])),
    "mean of p70-p98": lambda x: float(np.mean(x[(x >= np.quantile(x, 0.7)) & (x <= np.quantile(x, 0.98))])),
}


def merged(frame: pd.DataFrame) -> pd.DataFrame:
    """Pairs of consecutive windows of one trial as one window of twice the length."""
    frame = frame.sort_values("window").copy()
    frame["pair"] = (frame["window"] - 1) // 2
    grouped = frame.groupby(["repeat", "pair"])[["duration_s", "answers"]].sum().reset_index()
    grouped["rps"] = grouped["answers"] / grouped["duration_s"]
    return grouped


def cells(windows: pd.DataFrame, length: str) -> dict[tuple, fullspeed.CellWindows]:
    out = {}
    for (server, concurrency), frame in windows.groupby(["server", "concurrency"]):
        if length == "100 ms":
            frame = pd.concat([merged(f) for _, f in frame.groupby("repeat")], ignore_index=True)
        out[server, concurrency] = fullspeed.CellWindows(
            {int(r): g["rps"].to_numpy(float) for r, g in frame.groupby("repeat")}, 0.0
        )
    return out


def rows_of(path: Path) -> list[dict]:
    verdicts = pd.read_csv(path / "verdicts.csv")
    verdicts = verdicts[verdicts["kind"].isin(KINDS) & verdicts["ratio"].notna()]
    windows, runs = pd.read_csv(path / "windows.csv"), pd.read_csv(path / "runs.csv")
    rows = []
    by_length = {length: cells(windows, length) for length in ("50 ms", "100 ms")}
    for v in verdicts.itertuples():
        key_a, key_b = (v.a, v.concurrency), (v.b, v.concurrency)
        means = [runs[(runs["server"] == s) & (runs["concurrency"] == v.concurrency)].set_index("repeat")["rps"]
                 for s in (v.a, v.b)]  # fmt: skip
        found = inference.estimate(*means)
        base = {"run": path.name, "kind": v.kind, "c": v.concurrency, "pair": f"{v.a}/{v.b}"}
        rows.append({**base, "figure": "trial means", "ratio": found.ratio, "se": found.se})
        for length, found_cells in by_length.items():
            if key_a not in found_cells or key_b not in found_cells:
                continue
            for name, statistic in STATISTICS.items():
                found = fullspeed.estimate(found_cells[key_a], found_cells[key_b], statistic)
                rows.append({**base, "figure": f"{name}, {length}", "ratio": found.ratio, "se": found.se})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args()
    table = pd.DataFrame([row for path in args.results for row in rows_of(path)])
    summary = table.groupby("figure").agg(
        median_se=("se", "median"),
        a_a_se=("se", lambda s: s[table.loc[s.index, "kind"] == "A/A"].median()),
        a_a_ratio=("ratio", lambda s: math.exp(np.mean(np.log(s[table.loc[s.index, "kind"] == "A/A"])))),
        planted_ratio=("ratio", lambda s: math.exp(np.mean(np.log(s[table.loc[s.index, "kind"] == "variant"])))),
        planted_se=("se", lambda s: s[table.loc[s.index, "kind"] == "variant"].median()),
    )
    with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
        print(summary.sort_values("median_se").to_string())
        print()
        shown = table[table["kind"].isin(["A/A", "variant", "same server"])]
        print(shown.pivot_table(index=["run", "kind", "c", "pair"], columns="figure", values="ratio").to_string())


if __name__ == "__main__":
    main()
