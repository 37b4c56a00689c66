"""Does the work lens repeat itself across runs, and does it see what it must?
Several runs of the default profile's work jobs alone (``results/work.csv``; no
timed cell), from one commit, and runs whose gunicorn-gthread carries a planted
3% (the planted variants' own mechanism, a fixed count of iterations: a real
run, not an edited CSV). The default profile's servers plus the planted 3% and
10% variants (the default profile carries only the 5% one), so every planted
size is judged in every run. Then what issue 54's targets ask:

- per run: the CPU model, each server's instructions per request, the A/A
  spread, every declared work comparison's outcome (the same-server
  Python/Perl pairs decided; the planted 3%, 5%, 10% *more work*, with their
  measured excess);
- across runs: each server's figure, its spread between runs (max/min - 1);
- ``serverbench compare --metric work --fail-above 1%`` between every two
  default runs (target exit 0) and from every default run to every regressed
  one (target exit 1).

    .venv/bin/python benchmarks/work_reproducibility.py --runs 5 --regression-runs 1 [--keep DIR] [--json F] [--write]
    .venv/bin/python benchmarks/work_reproducibility.py --reuse R1 R2 R3 --regressed R4 [--commit C]

``--write`` keeps three tables in docs/data, which docs/work.md, docs/statistics.md and
docs/benchmarks.md quote (``serverbench docs``): work-reproducibility.csv (a row per run and
server: its instructions per request, the server's spread across the runs, the run's A/A
spread), work-reproducibility-verdicts.csv (a row per run and declared comparison) and
work-reproducibility-compare.csv (a row per ``compare``: the runs, against what, its exit).
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from pathlib import Path

import pandas as pd
from reproducibility import add_run_arguments, head_commit, interleaved, planted, run_matrix
from serverbench import REPO_ROOT
from serverbench.drive import docsfigures
from serverbench.lenses.work import compare as compare_work
from serverbench.lenses.work import decide as work_lens
from serverbench.plan import config as cfg

FAIL_ABOVE = 0.01
PLANTED = "0.03"
REGRESSION = planted(PLANTED)
EXTRA_VARIANTS = ["gunicorn-gthread-plus3", "gunicorn-gthread-plus10"]
TARGETS = ["work.csv"]


def variants_overlay(config: dict, directory: Path) -> Path:
    """A config file adding the planted 3% and 10% variants to the default profile's servers."""
    servers = [*config["profiles"]["default"]["servers"], *EXTRA_VARIANTS]
    path = directory / "variants.yaml"
    path.write_text(json.dumps({"profiles": {"default": {"servers": servers}}}))
    return path


def run_figures(index: int, path: Path, config: dict) -> dict:
    """One run: its servers' figures and its declared comparisons on work."""
    work = pd.read_csv(path / "work.csv")
    ok = work[work["status"] == "ok"]
    spread = work_lens.aa_spread(ok, config)
    comparisons = work_lens.work_verdict_table(work, config)
    figures = {
        "path": str(path),
        "cpu_model": ", ".join(sorted(set(work["cpu_model"].dropna().astype(str)))),
        "aa_spread": spread,
        "servers": dict(zip(work["server"], work[work_lens.FIGURE], strict=True)),
        "failed": {r.server: r.reason for r in work[work["status"] != "ok"].itertuples()},
        "comparisons": [
            {
                "kind": r.kind,
                "a": r.a,
                "b": r.b,
                "ratio": r.ratio,
                "low": r.ci_low,
                "high": r.ci_high,
                "outcome": r.outcome,
            }
            for r in comparisons.itertuples()
        ],  # fmt: skip
    }
    print(f"run {index} ({path}, {figures['cpu_model']}): A/A spread {spread or float('nan'):.4%}")
    for name, reason in figures["failed"].items():
        print(f"  {name}: no figure ({reason})")
    for row in figures["comparisons"]:
        if row["kind"] != "ceiling":
            print(f"  {row['kind']:12} {row['a']} / {row['b']}: {row['outcome']} {row['ratio']:.4f}× "
                  f"[{row['low']:.4f}, {row['high']:.4f}]")  # fmt: skip
    return figures


def between_runs(runs: list[dict]) -> dict[str, float]:
    """Each server's spread of instructions per request across the runs (max/min - 1)."""
    table = pd.DataFrame([run["servers"] for run in runs])
    spreads = (table.max() / table.min() - 1).to_dict()
    print("each server across the runs (instructions per request; spread max/min - 1):")
    for server in table.columns:
        shown = ", ".join(f"{value:,.1f}" for value in table[server])
        print(f"  {server:26} {shown}  spread {spreads[server]:.4%}")
    return spreads


def compare_exit(a: Path, b: Path, config: dict) -> tuple[int, str]:
    return compare_work.exit_status(compare_work.compare_work(a, b, config), FAIL_ABOVE)


def report(sets: list[Path], config: dict, regressed: list[Path] = ()) -> dict:
    figures: dict = {"runs": [run_figures(i, path, config) for i, path in enumerate(sets, start=1)]}
    figures["between_runs"] = between_runs(figures["runs"])
    same = {f"{i}->{j}": compare_exit(sets[i - 1], sets[j - 1], config)
            for i, j in itertools.permutations(range(1, len(sets) + 1), 2)}  # fmt: skip
    changed = {f"{i}->R{j}": compare_exit(sets[i - 1], regressed[j - 1], config)
               for i in range(1, len(sets) + 1) for j in range(1, len(regressed) + 1)}  # fmt: skip
    figures["compare"] = {"identical": same, "regressed": changed}
    print(f"compare --metric work --fail-above {FAIL_ABOVE:.0%} between default runs (target exit 0):")
    print("\n".join(f"  {key}: exit {code} ({why})" for key, (code, why) in same.items()))
    if regressed:
        print(f"  against a run whose gunicorn-gthread carries a planted {float(PLANTED):.0%} (target exit 1):")
        print("\n".join(f"  {key}: exit {code} ({why})" for key, (code, why) in changed.items()))
    return figures


def kept_tables(figures: dict, commit: str) -> dict[str, pd.DataFrame]:
    """The benchmark's figures as the three tables the docs quote (docs/data, unedited)."""
    servers = [
        {"run": number, "commit": commit, "cpu_model": run["cpu_model"], "server": server,
         "instructions_per_request": value, "spread_between_runs": figures["between_runs"][server],
         "aa_spread": run["aa_spread"]}
        for number, run in enumerate(figures["runs"], start=1)
        for server, value in run["servers"].items()
    ]  # fmt: skip
    verdicts = [
        {"run": number, "commit": commit, **row}
        for number, run in enumerate(figures["runs"], start=1)
        for row in run["comparisons"]
    ]
    compares = [
        {"a": key.split("->")[0], "b": key.split("->")[1], "against": against, "commit": commit,
         "fail_above": FAIL_ABOVE, "exit": code, "reason": why}
        for against, group in (("same commit", "identical"), ("planted 3%", "regressed"))
        for key, (code, why) in figures["compare"][group].items()
    ]  # fmt: skip
    return {
        "work-reproducibility.csv": pd.DataFrame(servers),
        "work-reproducibility-verdicts.csv": pd.DataFrame(verdicts),
        "work-reproducibility-compare.csv": pd.DataFrame(compares),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, 5, f"gunicorn-gthread carrying a planted {float(PLANTED) * 100:.0f}%%")
    args = parser.parse_args()
    commit = args.commit or head_commit()
    config = cfg.load(REPO_ROOT / "config.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        base = (args.keep or Path(tmp)).resolve()
        base.mkdir(parents=True, exist_ok=True)
        sets = args.reuse or [base / f"run{i}" for i in range(1, args.runs + 1)]
        regressed = (
            args.regressed if args.reuse else [base / f"regressed{i}" for i in range(1, args.regression_runs + 1)]
        )
        if not args.reuse:
            overlay = [variants_overlay(config, base)]
            for results, is_regressed in interleaved(sets, regressed):
                run_matrix(results, is_regressed, overlay, REGRESSION, TARGETS)
        figures = report(sets, config, regressed)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str))
    if args.write:
        docsfigures.keep_all(kept_tables(figures, commit))


if __name__ == "__main__":
    main()
