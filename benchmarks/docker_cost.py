"""The cost of the container: the same cell under `isolation: cgroup` and `isolation: docker`.

The seed study ran every server in a Docker container and never separated the
container's cost from the server's. This runs each server's cell both ways,
back to back and alternating (cgroup, docker, cgroup, docker, ...), with the
same CPUs, memory limit, load tool and concurrency, and reports the ratio of
requests/s (docker / cgroup), pair by pair, with the median and range, plus
the servers' peak memory and the interpreter each really ran. A Python
server from .venv runs the host's Python on the host but Debian's in the
image: its ratio mixes the container with the interpreter build; Debian's
uWSGI and Starman run the same Debian binaries both ways. It starts serverbench's engine if none
answers (and stops it), and builds the image first if it is missing, timing it.

    .venv/bin/python benchmarks/docker_cost.py [--servers gunicorn uwsgi-debian starman] [--rounds 5]
        [--duration 3] [--concurrency 2] [--write]

``--write`` keeps the table in docs/data/docker-cost.csv, which docs/executors.md shows
(`serverbench docs`): the figures and the method's pairs and seconds from one run.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from serverbench import REPO_ROOT
from serverbench.cell.phases import run_cell
from serverbench.host import engine, images
from serverbench.host.runenv import run_env
from serverbench.plan import config
from serverbench.plan.shapes import Cell


def cell(cfg: dict, isolation: str, server: str, concurrency: int, workdir: Path, index: int) -> dict:
    cfg["profiles"]["default"]["isolation"] = isolation
    base = workdir / f"{server}-{isolation}-{index}"
    record = run_cell(
        cfg, Cell("default", "wrk", server, concurrency, index), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    if record["status"] != "ok":
        raise RuntimeError(f"{server} under {isolation}: {record['reason']}")
    return record


DATA = REPO_ROOT / "docs" / "data" / "docker-cost.csv"


def figures(server: str, cgroup: list[dict], docker: list[dict], args) -> dict:
    """One server's row: the medians of each side, the ratio's median and range over the pairs."""

    def rps(records):
        return [r["load"]["requests_per_s"] for r in records]

    def memory_mb(records):
        return statistics.median(r["server"]["usage"]["cgroup_memory_peak_bytes"] or 0 for r in records) / 2**20

    def interpreter(records):
        return records[0]["server"]["interpreter"] or "-"

    ratios = [d / c for d, c in zip(rps(docker), rps(cgroup), strict=True)]
    return {
        "server": server, "pairs": len(ratios), "run_s": args.duration, "concurrency": args.concurrency,
        "memory_limit": args.memory_limit, "cgroup_rps": round(statistics.median(rps(cgroup)), 1),
        "docker_rps": round(statistics.median(rps(docker)), 1), "ratio": round(statistics.median(ratios), 3),
        "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
        "cgroup_mb": round(memory_mb(cgroup), 1), "docker_mb": round(memory_mb(docker), 1),
        "cgroup_interpreter": interpreter(cgroup), "docker_interpreter": interpreter(docker),
    }  # fmt: skip


def report(row: dict) -> str:
    return (
        f"{row['server']:<12} {row['cgroup_rps']:>11,.0f} {row['docker_rps']:>11,.0f} "
        f"{row['ratio']:>8.3f} {row['ratio_min']:>7.3f}–{row['ratio_max']:.3f} "
        f"{row['cgroup_mb']:>8.1f} {row['docker_mb']:>8.1f}  {row['cgroup_interpreter']} / {row['docker_interpreter']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", nargs="+", default=["gunicorn", "uwsgi-debian", "starman"])
    parser.add_argument("--rounds", type=int, default=5, help="alternating pairs (cgroup, then docker)")
    parser.add_argument("--duration", type=float, default=3)
    parser.add_argument("--concurrency", type=int, default=2, help="at most the workers: no starvation")
    parser.add_argument("--memory-limit", default="512M")
    parser.add_argument("--write", action="store_true", help="keep the table in docs/data and rewrite the docs")
    args = parser.parse_args()
    cfg = config.load(REPO_ROOT / "config.yaml")
    cfg["profiles"]["default"].update(
        duration=args.duration, memory_limit=args.memory_limit, ready_timeout=60, time_wait_max=10**6
    )
    os.environ["PATH"] = run_env()["PATH"]
    session = engine.open_session(cfg)
    try:
        started = time.monotonic()
        image = images.build_servers(cfg, "python", session.env)
        made = f"built in {time.monotonic() - started:.0f} s" if image.built else "already there"
        print(f"image {image.tag} ({made}); engine {'started for this run' if session.engine else 'of the host'}")
        print(f"wrk c={args.concurrency}, {args.duration:g} s runs, {args.rounds} pairs, memory {args.memory_limit}")
        print(f"{'server':<12} {'cgroup r/s':>11} {'docker r/s':>11} {'ratio':>8} {'min–max':>13} "
              f"{'MB cgrp':>8} {'MB dock':>8}  interpreter cgroup / docker")  # fmt: skip
        rows = []
        with tempfile.TemporaryDirectory() as workdir:
            for server in args.servers:
                runs = {"cgroup": [], "docker": []}
                for index in range(1, args.rounds + 1):
                    for isolation in ("cgroup", "docker"):
                        runs[isolation].append(cell(cfg, isolation, server, args.concurrency, Path(workdir), index))
                rows.append(figures(server, runs["cgroup"], runs["docker"], args))
                print(report(rows[-1]), flush=True)
    finally:
        session.close()
    if args.write:
        DATA.write_text(pd.DataFrame(rows).to_csv(index=False))
        subprocess.run([sys.executable, "-m", "serverbench.cli", "docs"], cwd=REPO_ROOT, check=True)


if __name__ == "__main__":
    main()
