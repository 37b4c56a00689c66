"""Do a run's answers reproduce, and can it see what it must? Several default
runs (each with a new seed), and runs with a planted 10% regression, then what
a user would check across them:

- per run: its host (CPU model) and steadiness figure (the share of time its
  CPUs ran slow), its seed, the outcome counts, the A/A control's and the
  planted 5% variant's outcomes with their detectable ratios, every
  same-server Python/Perl pair's outcome and detectable ratio;
- reversals: a comparison *faster* in one run and *slower* in another (target 0);
- ``serverbench compare A B --fail-above 5%`` for every two default runs (it
  must never exit 1: nothing changed between them);
- and against every regression run: a default run made with gunicorn-gthread
  (and its A/A twin) doing 10% of the hello's cost more per answer (the
  planted variant's mechanism, not a doctored CSV): ``compare`` must exit 1.

    .venv/bin/python benchmarks/reproducibility.py --runs 5 --regression-runs 1 [--keep DIR]
    .venv/bin/python benchmarks/reproducibility.py --reuse R1 R2 R3 --regressed R4
    .venv/bin/python benchmarks/reproducibility.py --runs 5 --configfile design.yaml   # e.g. profiles.default.repeats

``--write`` keeps two tables in docs/data, which docs/statistics.md and docs/benchmarks.md quote
(``serverbench docs``): reproducibility.csv (each run's verdicts.csv rows, unedited, with the
run's number, commit, seed, CPU model and steadiness) and reproducibility-compare.csv (a row per
``compare``: the runs, against what, normalised by what, its exit, the range of the drops its
cells could have shown, gunicorn-gthread's and its twin's B/A ratios, and the comparisons the two
runs decided in opposite directions).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml
from serverbench import REPO_ROOT
from serverbench.decide import compare
from serverbench.decide.verdicts import read_verdicts
from serverbench.drive import docsfigures
from serverbench.plan import config as cfg

KEY = ["kind", "profile", "workload", "tool", "concurrency", "a", "b"]
DIRECTIONS = {"faster", "slower"}
TESTED = DIRECTIONS | {"equivalent", "undetermined"}
SLOWDOWN = 0.8
FAIL_ABOVE = 0.05


def planted(share: str, server: str = "gunicorn-gthread") -> dict:
    """A config making ``server`` (and its A/A twin, a copy of it) do ``share`` of the hello's cost
    more per answer: its whole catalogue entry with SERVERBENCH_EXTRA_SHARE set, since a config's
    catalogue entry replaces catalogue.yaml's rather than being merged into it."""
    entry = yaml.safe_load((REPO_ROOT / cfg.DEFAULT_CATALOGUE).read_text())[server]
    return {"catalogue": {server: {**entry, "env": {**entry.get("env", {}), "SERVERBENCH_EXTRA_SHARE": share}}}}


REGRESSION = planted("0.10")
REGRESSED_SERVERS = ("gunicorn-gthread", "gunicorn-gthread-again")


def run_matrix(
    results: Path, regressed: bool = False, overrides: list[Path] = (), regression: dict = REGRESSION,
    targets: list[str] = (),
) -> None:  # fmt: skip
    """One default run, as `make bench` starts it, into its own results directory; ``regressed``:
    with ``regression`` laid over (gunicorn-gthread doing 10% of the hello's cost more per
    answer: a real regression); ``overrides``: config files laid over config.yaml for every
    run (another design to try); ``targets``: the outputs to make (relative to ``results``;
    none: the whole run)."""
    files = [str(path.resolve()) for path in overrides]
    if regressed:
        results.mkdir(parents=True, exist_ok=True)
        (results.parent / "regression.yaml").write_text(json.dumps(regression))
        files.append(str(results.parent / "regression.yaml"))
    extra = ["--configfile", "config.yaml", *files] if files else []
    wanted = [str(results / target) for target in targets]  # before --config, which takes every word after it
    argv = [sys.executable, "-m", "snakemake", *wanted, "--cores", "4", "--quiet", *extra]
    subprocess.run([*argv, "--config", f"results={results}"], cwd=REPO_ROOT, check=True)


def outcome_counts(verdicts: pd.DataFrame) -> str:
    throughput = verdicts[~verdicts["kind"].str.startswith("p99")]
    counts = throughput["outcome"].value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in [*sorted(TESTED), "not tested", "not comparable"])


def tested_rows(verdicts: pd.DataFrame) -> list[str]:
    rows = verdicts[verdicts["outcome"].isin(TESTED)]
    return [
        f"  {r.kind:12} c={r.concurrency:<3} {r.a} / {r.b}: {r.outcome} {r.ratio:.3f}× "
        f"[{r.ci_low:.3f}, {r.ci_high:.3f}], could detect {r.detectable_ratio:.3f}×"
        for r in rows.itertuples()
    ]


def flipped(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """The comparisons two runs decided in opposite directions."""
    both = first.merge(second, on=KEY, suffixes=("_1", "_2"))
    found = both[both["outcome_1"].isin(DIRECTIONS) & both["outcome_2"].isin(DIRECTIONS)]
    return found[found["outcome_1"] != found["outcome_2"]]


def reversals(verdicts: list[pd.DataFrame]) -> list[str]:
    """Comparisons decided in opposite directions by two runs."""
    found = []
    for (i, first), (j, second) in itertools.combinations(enumerate(verdicts, start=1), 2):
        found += [f"runs {i}/{j}: {r.a} / {r.b} c={r.concurrency}: {r.outcome_1} then {r.outcome_2}"
                  for r in flipped(first, second).itertuples()]  # fmt: skip
    return found


def compare_exit(a: tuple, b: tuple, config: dict, normalise: str = "ceiling") -> int:
    table = compare.compare_sets(a, b, config, FAIL_ABOVE, normalise)
    return compare.exit_status(table, FAIL_ABOVE)[0]


def compare_row(a: tuple, b: tuple, config: dict, normalise: str) -> dict:
    """``serverbench compare A B --fail-above 5%`` by ``normalise``: its exit, why, and the range
    of the drop its comparable cells could have shown."""
    table = compare.compare_sets(a, b, config, FAIL_ABOVE, normalise)
    code, why = compare.exit_status(table, FAIL_ABOVE)
    drops = table.loc[table["outcome"] != compare.Outcome.NOT_COMPARABLE, "detectable_drop"].dropna()
    planted = table.loc[table["server"].isin(REGRESSED_SERVERS), "ratio"].dropna()
    return {"normalise": normalise, "fail_above": FAIL_ABOVE, "exit": code, "reason": why,
            "detectable_drop_min": drops.min() if len(drops) else None,
            "detectable_drop_max": drops.max() if len(drops) else None,
            "gunicorn_ratio_min": planted.min() if len(planted) else None,
            "gunicorn_ratio_max": planted.max() if len(planted) else None}  # fmt: skip


def steadiness(environment: dict) -> str:
    check = environment.get("host_speed") or {}
    share = check.get("slow_share_max")
    return "not checked" if share is None else f"CPUs slow {share:.0%} of the time"


def kind_rows(table: pd.DataFrame, kind: str) -> list[dict]:
    rows = table[table["kind"] == kind]
    return [{"c": int(r.concurrency), "a": r.a, "b": r.b, "outcome": r.outcome,
             "ratio": None if pd.isna(r.ratio) else round(r.ratio, 4),
             "detectable": None if pd.isna(r.detectable_ratio) else round(r.detectable_ratio, 4)}
            for r in rows.itertuples()]  # fmt: skip


def describe(rows: list[dict]) -> str:
    return "; ".join(
        f"c={r['c']} {r['a']}/{r['b']} {r['outcome']}"
        + ("" if r["ratio"] is None else f" {r['ratio']:.3f}× (could detect {r['detectable'] or float('nan'):.3f}×)")
        for r in rows
    )


def run_figures(index: int, path: Path, table: pd.DataFrame, environment: dict) -> dict:
    figures = {"path": str(path), "seed": environment.get("seed"), "cpu_model": environment.get("cpu_model"),
               "steadiness": steadiness(environment), "outcomes": outcome_counts(table),
               "a_a": kind_rows(table, "A/A"), "planted": kind_rows(table, "variant"),
               "same_server": kind_rows(table, "same server")}  # fmt: skip
    print(f"run {index} ({path}, seed {figures['seed']}, {figures['cpu_model']}, {figures['steadiness']}): "
          f"{figures['outcomes']}")  # fmt: skip
    print("\n".join(tested_rows(table)))
    for name in ("a_a", "planted", "same_server"):
        print(f"  {name}: {describe(figures[name])}")
    return figures


def report(sets: list[Path], config: dict, regressed: list[Path] = ()) -> dict:
    verdicts = [read_verdicts(path / "verdicts.csv") for path in sets]
    loaded = [compare.read_set(path) for path in sets]
    figures: dict = {"runs": [run_figures(i, path, table, found[2]) for i, (path, table, found)
                              in enumerate(zip(sets, verdicts, loaded, strict=True), start=1)]}  # fmt: skip
    figures["reversals"] = reversals(verdicts)
    print(f"reversals between any two runs: {len(figures['reversals'])} (target 0)")
    print("\n".join(f"  {line}" for line in figures["reversals"]))
    a_a = [row["outcome"] for run in figures["runs"] for row in run["a_a"]]
    figures["a_a_directions"] = sum(v in DIRECTIONS for v in a_a)
    print(f"A/A comparisons faster or slower: {figures['a_a_directions']} of {len(a_a)} (target 0)")
    worse = [compare.read_set(path) for path in regressed]
    for normalise in ("ceiling", "host"):
        same = {f"{i}->{j}": compare_exit(loaded[i - 1], loaded[j - 1], config, normalise)
                for i, j in itertools.permutations(range(1, len(sets) + 1), 2)}  # fmt: skip
        changed = {f"{i}->R{j}": compare_exit(loaded[i - 1], worse[j - 1], config, normalise)
                   for i in range(1, len(sets) + 1) for j in range(1, len(worse) + 1)}  # fmt: skip
        figures[f"compare by {normalise}"] = {"identical": same, "regressed": changed}
        print(f"compare --fail-above {FAIL_ABOVE:.0%}, normalised by the {normalise}, between default runs (exit"
              " codes; 1 would be a false alarm): " + ", ".join(f"{k}: {v}" for k, v in same.items()))  # fmt: skip
        if worse:
            print("  against a run with gunicorn-gthread 10% costlier (target: exit 1 every time): "
                  + ", ".join(f"{k}: {v}" for k, v in changed.items()))  # fmt: skip
    return figures


def kept_tables(sets: list[Path], regressed: list[Path], config: dict, commit: str) -> dict[str, pd.DataFrame]:
    """The benchmark's figures as the two tables the docs quote (docs/data): every run's verdicts
    with the run's facts, and every ``compare`` between runs with its exit."""
    loaded = [compare.read_set(path) for path in sets]
    verdicts = [read_verdicts(path / "verdicts.csv") for path in sets]
    runs = []
    for number, (table, found) in enumerate(zip(verdicts, loaded, strict=True), start=1):
        environment = found[2]
        check = environment.get("host_speed") or {}
        facts = {"run": number, "commit": commit, "seed": environment.get("seed"),
                 "cpu_model": environment.get("cpu_model"), "slow_share": check.get("slow_share_max")}  # fmt: skip
        runs.append(table.assign(**facts)[[*facts, *table.columns]])
    worse = [compare.read_set(path) for path in regressed]
    pairs = [(str(i), str(j), "same commit", loaded[i - 1], loaded[j - 1],
              len(flipped(verdicts[i - 1], verdicts[j - 1])))
             for i, j in itertools.permutations(range(1, len(sets) + 1), 2)]  # fmt: skip
    pairs += [(str(i), f"R{j}", "planted 10%", loaded[i - 1], worse[j - 1], None)
              for i in range(1, len(sets) + 1) for j in range(1, len(worse) + 1)]  # fmt: skip
    compares = [
        {"a": a, "b": b, "against": against, "commit": commit, **compare_row(first, second, config, normalise),
         "reversals": flips}
        for normalise in ("host", "ceiling")
        for a, b, against, first, second, flips in pairs
    ]  # fmt: skip
    return {"reproducibility.csv": pd.concat(runs), "reproducibility-compare.csv": pd.DataFrame(compares)}


def add_run_arguments(parser: argparse.ArgumentParser, runs: int, regression: str) -> None:
    """The options of a benchmark that makes (or reuses) default runs and regressed ones."""
    parser.add_argument("--runs", type=int, default=runs, help="default runs to make (each with a new seed)")
    parser.add_argument("--reuse", nargs="+", type=Path, metavar="RESULTS", help="result sets already made")
    parser.add_argument("--keep", type=Path, help="make the runs under this directory and keep them")
    parser.add_argument("--regression-runs", type=int, default=1, help=f"runs with {regression}")
    parser.add_argument("--regressed", nargs="*", type=Path, default=[], metavar="RESULTS", help="such runs made")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--write", action="store_true", help="keep the figures in docs/data (serverbench docs)")
    parser.add_argument("--commit", help="the commit the reused runs were made of (default: this checkout's)")


def head_commit() -> str:
    """The checkout's commit (short), which the kept figures name."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True)
    return done.stdout.strip()


def kept_when() -> dict[str, str]:
    """The commit and the day a benchmark's kept figures were measured at (columns of its CSV)."""
    return {"commit": head_commit(), "date": datetime.date.today().isoformat()}


def against_target(within: bool) -> str:
    """A benchmark's verdict on its target, in the words the docs quote."""
    return "within the target" if within else "outside the target"


def interleaved(sets: list[Path], regressed: list[Path]) -> list[tuple[Path, bool]]:
    """(results, regressed?) in the order to make them: each regression run between default
    runs, so drift over hours hits both kinds."""
    order = [(path, False) for path in sets]
    for k, path in enumerate(regressed, start=1):
        order.insert(k * len(sets) // (len(regressed) + 1) + k - 1, (path, True))
    return order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, 3, "a planted 10%% regression")
    parser.add_argument(
        "--configfile", type=Path, nargs="*", default=[], help="laid over config.yaml for every run (a design to try)"
    )
    args = parser.parse_args()
    config = cfg.load(REPO_ROOT / "config.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        sets = args.reuse or [base / f"run{i}" for i in range(1, args.runs + 1)]
        regressed = (
            args.regressed if args.reuse else [base / f"regressed{i}" for i in range(1, args.regression_runs + 1)]
        )
        if not args.reuse:
            for results, is_regressed in interleaved(sets, regressed):
                run_matrix(results.resolve(), is_regressed, args.configfile)
        figures = report(sets, config, regressed)
        if args.write:
            docsfigures.keep_all(kept_tables(sets, regressed, config, args.commit or head_commit()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
