"""Does advise recommend the same deployment twice? The advise lens run ``--runs`` times on each
ground-truth app of tests/test_advise.py (tests/apps/advise_app.py, gunicorn's gthread worker
on one server CPU), one after another:

- ``cpu``: about 7 ms of SHA-256 per request, no waiting (/spin);
- ``io``: a 20 ms wait per request, almost no CPU (/wait): at most workers × threads / 20 ms
  requests per second, the bound each recommendation is set against;
- ``io-heavy``: the same wait, every worker holding 40 MB, a 100 MB budget.

Per app: each run's recommendation (setting, capacity interval, readings, whether it
reproduced from its deployed file and by how much), whether every two runs' recommended
capacities are told apart by the margin (target: none are, issue 79) and the largest move of
the recommended capacity between runs.

    .venv/bin/python benchmarks/advise_reproducibility.py --runs 3 [--quick] [--json F] [--write]

``--write`` keeps a row per app and run (with its app's agreement) in
docs/data/advise-reproducibility.csv, which docs/advise.md's table and figures show.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path

from serverbench import REPO_ROOT, files
from serverbench.lenses.advise.decide import recommendations
from serverbench.lenses.advise.measure import run_advise
from serverbench.lenses.advise.record import load_advice
from serverbench.lenses.advise.search import Capacity
from serverbench.plan import config as cfg

KEPT = REPO_ROOT / "docs" / "data" / "advise-reproducibility.csv"
WAIT_S = 0.020  # the /wait route's sleep (tests/apps/advise_app.py)
# The tests' short runs (tests/test_advise.py QUICK), for a benchmark that ends in minutes.
QUICK = {
    "objective_p99_ms": 250, "peak_s": 0.5, "step_s": 1, "max_step_s": 2, "tail_samples": 150,
    "rate_steps": 3, "resolution": 0.1, "max_points": 5, "reloads": 1, "reload_every": 0.6,
}  # fmt: skip
APPS = {
    "cpu": ("spin", {}, None),
    "io": ("wait", {}, None),
    "io-heavy": ("wait", {"ADVISE_HOLD_MB": "40"}, 100),
}


def config_for(app: str, quick: bool) -> dict:
    """The shipped config with the advise profile on the planted app (one server CPU)."""
    workload, env, budget = APPS[app]
    config = cfg.load(REPO_ROOT / "config.yaml", {"profile": "advise"})
    config["apps"]["planted"] = {
        "python": {"dir": str(REPO_ROOT / "tests" / "apps"), "module": "advise_app"},
        "workloads": {
            "spin": {"path": "/spin", "expect": {"status": 200, "matches": "^[0-9a-f]{64}$"}},
            "wait": {"path": "/wait", "expect": {"status": 200, "body": "waited"}},
        },
    }
    profile = config["profiles"]["advise"]
    profile.update(app="planted", workloads=[workload], server_cpus=[0], client_cpus=[1], time_wait_max=10**6)
    profile["advise"] = {**profile["advise"], **(QUICK if quick else {}), "memory_budget_mb": budget}
    entry = dict(config["catalogue"]["gunicorn-gthread"])
    entry.update(search={"workers": [1, 16], "threads": [1, 16]}, env={**entry.get("env", {}), **env})
    config["catalogue"]["planted-gthread"] = entry
    return cfg.validate(config)


def one_run(app: str, quick: bool, where: Path) -> dict:
    started = time.monotonic()
    path = where / f"{app}.json"
    run_advise(config_for(app, quick), "advise", "planted-gthread", path, where / f"{app}.log")
    record = load_advice(json.loads(path.read_text()))
    row = recommendations([record]).to_dict("records")[0]
    keys = ["verdict", "workers", "threads", "capacity_rps", "capacity_missed_rps", "memory_mb", "bound_by",
            "readings", "reproduced", "reproduced_rps", "reproduced_ratio", "margin"]  # fmt: skip
    found = {key: row.get(key) for key in keys}
    found = {k: (None if isinstance(v, float) and v != v else v) for k, v in found.items()}
    if app != "cpu" and found["workers"]:
        found["bound_rps"] = found["workers"] * found["threads"] / WAIT_S
    found["seconds"] = round(time.monotonic() - started, 1)
    return {key: str(value) if hasattr(value, "value") else value for key, value in found.items()}


def agreement(runs: list[dict]) -> dict:
    """Whether every two runs' recommended capacities are told apart by the margin, and the moves."""
    told_apart, moves = [], []
    for a, b in itertools.combinations([r for r in runs if r["capacity_rps"]], 2):
        first = Capacity(a["capacity_rps"], a["capacity_missed_rps"])
        second = Capacity(b["capacity_rps"], b["capacity_missed_rps"])
        told_apart.append(first.told_apart(second, a["margin"]))
        moves.append(max(a["capacity_rps"], b["capacity_rps"]) / min(a["capacity_rps"], b["capacity_rps"]))
    return {"pairs": len(told_apart), "told_apart": sum(told_apart), "largest_move": max(moves, default=None)}


def write_csv(found: dict, path: Path = KEPT) -> None:
    """A row per app and run, its app's agreement beside it (docs/data, for the docs)."""
    import pandas as pd

    rows = [
        {"app": app, "run": number, **run, **{k: v for k, v in result.items() if k != "runs"}}
        for app, result in found.items()
        for number, run in enumerate(result["runs"], start=1)
    ]
    files.write_atomic(path, pd.DataFrame(rows).to_csv(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="the tests' short runs")
    parser.add_argument("--apps", nargs="*", default=list(APPS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--write", action="store_true", help=f"keep the rows in {KEPT.relative_to(REPO_ROOT)}")
    args = parser.parse_args()
    found = {}
    with tempfile.TemporaryDirectory(prefix="advise-repro-") as tmp:
        for app in args.apps:
            runs = []
            for number in range(args.runs):
                where = Path(tmp) / f"{app}-{number}"
                where.mkdir()
                runs.append(one_run(app, args.quick, where))
                print(app, number + 1, json.dumps(runs[-1]), flush=True)
            found[app] = {"runs": runs, **agreement(runs)}
            print(app, "agreement", json.dumps(agreement(runs)), flush=True)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    if args.write:
        write_csv(found)


if __name__ == "__main__":
    main()
