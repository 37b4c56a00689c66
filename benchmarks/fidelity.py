"""Fidelity: does the harness measure what a careful person measures by hand?

For each server, back to back and alternating, it runs
  (a) a serverbench cell (isolation, verify, warm-up, monitor, and fairness
      read from the sockets during the load, as by default), and
  (b) a plain hand run: the same server argv pinned with taskset, a sleep-free
      readiness poll, the same warm-up, and the same wrk command pinned to the
      client CPU,
and reports the ratio of the medians of requests/s. Target: within ±3%.

    .venv/bin/python benchmarks/fidelity.py [--servers gunicorn uwsgi starman] [--rounds 5] [--duration 5]
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from serverbench import REPO_ROOT, config, parsers, servers
from serverbench.cell import make_rundir, run_cell, run_env


def hand_run(cfg: dict, server: str, concurrency: int) -> float:
    profile = cfg["profiles"]["default"]
    port = servers.free_port()
    rundir = make_rundir()
    values = {
        "host": "127.0.0.1",
        "port": port,
        "workers": profile["workers"],
        "threads": profile["threads"],
        "backlog": profile["backlog"],
        "apps": str(rundir / "apps"),
        "rundir": str(rundir),
        "root": str(REPO_ROOT),
        "venv": sys.prefix,
        "user": "root",
    }
    spec = cfg["catalogue"][server]
    argv = servers.render_argv(spec["command"], values)
    env = run_env()
    cpus = ",".join(map(str, profile["server_cpus"]))
    proc = subprocess.Popen(
        ["taskset", "-c", cpus, *argv],
        env=env,
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{server} did not listen") from None
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/"
        client = ",".join(map(str, profile["client_cpus"]))
        threads = str(len(profile["client_cpus"]))
        wrk = ["taskset", "-c", client, "wrk", "--latency", "-t", threads, "-c", str(concurrency), "--timeout", "5s"]
        subprocess.run([*wrk, "-d", f"{profile['warmup']:g}s", url], capture_output=True, env=env, check=False)
        done = subprocess.run(
            [*wrk, "-d", f"{profile['duration']:g}s", url], capture_output=True, text=True, env=env, check=False
        )
        return parsers.parse("wrk", done.stdout)["requests_per_s"]
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=10)
        subprocess.run(["rm", "-rf", str(rundir)], check=False)


def framework_run(cfg: dict, server: str, concurrency: int, workdir: Path, index: int) -> float:
    base = workdir / f"{server}-{index}"
    record = run_cell(
        cfg, config.Cell("default", "wrk", server, concurrency, index), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    if record["status"] != "ok":
        raise RuntimeError(f"{server}: {record['reason']}")
    return record["load"]["requests_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", nargs="+", default=["gunicorn", "uwsgi", "starman", "plackup"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--fairness", choices=["connections", "off"], default="connections")
    args = parser.parse_args()
    cfg = config.load(REPO_ROOT / "config.yaml")
    cfg["profiles"]["default"].update(duration=args.duration, fairness=args.fairness, time_wait_max=10**6)
    os.environ["PATH"] = run_env()["PATH"]
    print(f"{'server':<10} {'hand req/s':>12} {'framework req/s':>16} {'ratio':>7}   (median of {args.rounds})")
    with tempfile.TemporaryDirectory() as workdir:
        for server in args.servers:
            hand, framework = [], []
            for index in range(1, args.rounds + 1):
                hand.append(hand_run(cfg, server, args.concurrency))
                framework.append(framework_run(cfg, server, args.concurrency, Path(workdir), index))
            ratio = statistics.median(framework) / statistics.median(hand)
            print(
                f"{server:<10} {statistics.median(hand):>12,.0f} {statistics.median(framework):>16,.0f} "
                f"{ratio:>7.3f}  {'ok' if abs(ratio - 1) <= 0.03 else 'OUTSIDE ±3%'}"
            )


if __name__ == "__main__":
    main()
