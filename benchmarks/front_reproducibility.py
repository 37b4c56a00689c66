"""Does "does it need a front?" come out the same twice? The front lens of the shipped ``front``
profile (its slow kinds, counts, rounds and run lengths; the work lens left out: it does not
decide the answer) run ``--runs`` times on each server, one run after another, every server
bare and behind nginx where the profile has it (Unit bare).

Per server and run: the answer, the placements that starved the normal clients bare and behind
the front (k of n, every slow sender, body and reader pooled), the pooled share kept bare (its
median, and the interval of its mean less 1); and
whether every run gave the same answer (target: all, issue 79). gunicorn's gthread worker is
the case to watch: whether slow clients starve it is which worker the kernel handed them.

    .venv/bin/python benchmarks/front_reproducibility.py --runs 2 [--servers gunicorn-gthread ...] [--json F] [--write]

``--write`` keeps the rows in docs/data/front-reproducibility.csv, which docs/front.md's table
shows (``serverbench docs``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from serverbench import REPO_ROOT, files
from serverbench.lenses.front.decide import front_verdicts
from serverbench.lenses.front.measure import run_front
from serverbench.lenses.front.record import ALONE, EVERY_SLOW_KIND, load_front
from serverbench.lenses.front.table import front_table, work_rows
from serverbench.plan import config as cfg
from serverbench.plan.fronts import is_fronted

PROFILE = "front"
KEPT = REPO_ROOT / "docs" / "data" / "front-reproducibility.csv"


def config_for() -> dict:
    config = cfg.load(REPO_ROOT / "config.yaml", {"profile": PROFILE})
    config["profiles"][PROFILE].update(time_wait_max=10**6)
    return cfg.validate(config)


def one_run(config: dict, server: str, where: Path) -> dict:
    """One front job of ``server`` and what decides its answer."""
    started = time.monotonic()
    path = where / f"{server}.json"
    run_front(config, PROFILE, server, path, where / f"{server}.log")
    record = load_front(json.loads(path.read_text()))
    verdicts = front_verdicts(front_table([record]), work_rows([]), config)
    pooled = verdicts[verdicts["slow"] == EVERY_SLOW_KIND].set_index("b") if "slow" in verdicts else None
    bare = pooled.loc[ALONE] if pooled is not None and ALONE in pooled.index else None
    fronted = pooled[pooled.index != ALONE] if pooled is not None else None
    front = fronted.iloc[0] if fronted is not None and len(fronted) else None
    return {
        "server": server,
        "answer": str(verdicts["answer"].iloc[0]),
        "placements": int(bare["placements"]) if bare is not None else None,
        "starved_bare": int(bare["starved_a"]) if bare is not None else None,
        "starved_front": int(front["starved_a"]) if front is not None else None,
        "kept_bare_median": round(float(bare["a_value"]), 3) if bare is not None else None,
        "kept_bare_minus_1_interval": [round(float(bare["ci_low"]), 3), round(float(bare["ci_high"]), 3)]
        if bare is not None and bare["ci_low"] == bare["ci_low"]
        else None,
        "seconds": round(time.monotonic() - started, 1),
    }


def write_csv(rows: list[dict], path: Path = KEPT) -> None:
    """A row per run and server, the interval as two columns (docs/data, for the docs' table)."""
    import pandas as pd

    table = pd.DataFrame(rows)
    interval = table.pop("kept_bare_minus_1_interval")
    table["kept_bare_minus_1_low"] = [i[0] if i else None for i in interval]
    table["kept_bare_minus_1_high"] = [i[1] if i else None for i in interval]
    files.write_atomic(path, table.to_csv(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--servers", nargs="*", help="default: the profile's servers that are not behind a front")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--write", action="store_true", help=f"keep the rows in {KEPT.relative_to(REPO_ROOT)}")
    args = parser.parse_args()
    config = config_for()
    catalogue = config["catalogue"]
    servers = args.servers or [s for s in config["profiles"][PROFILE]["servers"] if not is_fronted(catalogue[s])]
    found = []
    with tempfile.TemporaryDirectory(prefix="front-repro-") as tmp:
        for number in range(1, args.runs + 1):
            for server in servers:
                where = Path(tmp) / f"run-{number}"
                where.mkdir(exist_ok=True)
                row = {"run": number, **one_run(config, server, where)}
                found.append(row)
                print(json.dumps(row), flush=True)
    agree = {s: len({r["answer"] for r in found if r["server"] == s}) == 1 for s in servers}
    summary = {"runs": found, "same_answer": agree, "all_agree": all(agree.values())}
    print(json.dumps({"same_answer": agree, "all_agree": summary["all_agree"]}))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    if args.write:
        write_csv(found)


if __name__ == "__main__":
    main()
