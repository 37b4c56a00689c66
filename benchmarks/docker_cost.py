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
        [--duration 3] [--concurrency 2]
"""

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

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


def report(server: str, cgroup: list[dict], docker: list[dict]) -> str:
    def rps(records):
        return [r["load"]["requests_per_s"] for r in records]

    def memory_mb(records):
        return statistics.median(r["server"]["usage"]["cgroup_memory_peak_bytes"] or 0 for r in records) / 2**20

    def interpreter(records):
        return records[0]["server"]["interpreter"] or "-"

    ratios = [d / c for d, c in zip(rps(docker), rps(cgroup), strict=True)]
    return (
        f"{server:<12} {statistics.median(rps(cgroup)):>11,.0f} {statistics.median(rps(docker)):>11,.0f} "
        f"{statistics.median(ratios):>8.3f} {min(ratios):>7.3f}–{max(ratios):.3f} "
        f"{memory_mb(cgroup):>8.1f} {memory_mb(docker):>8.1f}  {interpreter(cgroup)} / {interpreter(docker)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", nargs="+", default=["gunicorn", "uwsgi-debian", "starman"])
    parser.add_argument("--rounds", type=int, default=5, help="alternating pairs (cgroup, then docker)")
    parser.add_argument("--duration", type=float, default=3)
    parser.add_argument("--concurrency", type=int, default=2, help="at most the workers: no starvation")
    parser.add_argument("--memory-limit", default="512M")
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
        with tempfile.TemporaryDirectory() as workdir:
            for server in args.servers:
                runs = {"cgroup": [], "docker": []}
                for index in range(1, args.rounds + 1):
                    for isolation in ("cgroup", "docker"):
                        runs[isolation].append(cell(cfg, isolation, server, args.concurrency, Path(workdir), index))
                print(report(server, runs["cgroup"], runs["docker"]), flush=True)
    finally:
        session.close()


if __name__ == "__main__":
    main()
