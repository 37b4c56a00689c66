"""How repeatable is the work lens, server by server? For each server, ``--pairs``
pairs of lives under valgrind (serverbench.lenses.work.measure, the default profile's
settings and config.yaml's work_lens), each pair one instructions-per-request
figure; printed: every figure, the spread (max/min - 1) and the seconds a pair
took. Its figures go to docs/work.md. Counts do not depend on the machine's
speed, but run it alone anyway: the timers a server runs by the clock are what
two lives of equal length cancel, and a crowded machine stretches them.

    .venv/bin/python benchmarks/work_lens.py [--servers uwsgi-debian uwsgi-psgi gunicorn-gthread] [--pairs 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from serverbench import REPO_ROOT
from serverbench.lenses.work import measure as work
from serverbench.lenses.work import workenv, workfigures
from serverbench.plan import config as cfg
from serverbench.plan.shapes import Target


def figures(config: dict, server: str, pairs: int, workload: str) -> list[tuple[float, float]]:
    """(instructions per request, seconds) of each pair of lives."""
    target = Target("default", server, workload)
    with tempfile.TemporaryDirectory(prefix="work-lens-") as raw:
        Path(raw).chmod(0o755)  # Unit's router and applications run as another user and write below it
        kept = Path(raw) / "kept"  # each life's raw outputs, gone with the directory
        lives = work.Lives(config, target, workenv.fixed_env(server, {}), Path(raw) / "server.log", Path(raw), kept)
        # As the work job does, the client is picked in a life under perf, before any life under
        # valgrind: there the verification's requests would meet a worker's first answer in one
        # life of a pair and not the other (this script's figures moved by up to 1.9% that way).
        lives.life(work.COUNTERS, config["work_lens"]["warmup_requests"], 0.0)
        found = []
        for _ in range(pairs):
            started = time.monotonic()
            counted = workfigures.instructions(config, *lives.pair(work.INSTRUCTIONS))
            found.append((counted.per_request, time.monotonic() - started))
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", nargs="+", default=["uwsgi-debian", "uwsgi-psgi", "gunicorn-gthread"])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--workload", default="hello")
    args = parser.parse_args()
    config = cfg.load(REPO_ROOT / "config.yaml")
    print(f"{'server':<24} {'instructions per request (each pair)':<52} {'spread':>8} {'s/pair':>7}")
    for server in args.servers:
        found = figures(config, server, args.pairs, args.workload)
        values = [value for value, _ in found]
        spread = max(values) / min(values) - 1 if min(values) > 0 else float("nan")
        shown = ", ".join(f"{value:,.1f}" for value in values)
        seconds = sum(s for _, s in found) / len(found)
        print(f"{server:<24} {shown:<52} {spread:>8.4%} {seconds:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
