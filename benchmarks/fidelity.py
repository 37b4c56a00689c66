"""Fidelity: does the harness measure what a careful person measures by hand?

For each server, back to back and alternating, it runs
  (a) a serverbench cell (isolation, verify, warm-up, monitor, and fairness
      read from the sockets during the load, as by default), and
  (b) a plain hand run: the same server argv (rendered by the harness's own
      placeholder code) pinned with taskset, a readiness poll, the same warm-up,
      and the same wrk command line pinned to the client CPU, read from wrk's
      own "Requests/sec:" line,
and reports the ratio of the medians of requests/s. Target: within ±3%.

    .venv/bin/python benchmarks/fidelity.py [--servers nginx-baseline fastwsgi uwsgi-psgi] [--rounds 5]
        [--duration 5] [--concurrency 100]

The ratio is taken pair by pair (each cell against the hand run just before
it), and the median of the pairs is reported with their range.
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from serverbench import REPO_ROOT, config, loadgen, servers
from serverbench.cell import run_cell
from serverbench.launch import render, server_values
from serverbench.model import Cell
from serverbench.runenv import make_rundir, run_env


def wrk_requests_per_s(text: str) -> float:
    """wrk's own "Requests/sec:" line: the hand run reads what a person reads."""
    return float(re.search(r"^Requests/sec:\s*([0-9.]+)", text, re.M).group(1))


def wait_listening(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on port {port}") from None
            time.sleep(0.05)


def hand_run(cfg: dict, server: str, concurrency: int) -> float:
    """The same server argv and wrk command line as a cell, pinned with taskset; nothing else."""
    profile = config.effective_profile(cfg, "default")
    port = servers.free_port()
    rundir = make_rundir()
    spec = cfg["catalogue"][server]
    values = server_values(profile, "127.0.0.1", port, rundir)
    servers.render_files(spec.get("files", {}), values, rundir)  # nginx.conf and the like
    argv = render(cfg, spec["command"], values)
    env = run_env()
    pin_server = ["taskset", "-c", ",".join(map(str, profile.server_cpus))]
    proc = subprocess.Popen(
        [*pin_server, *argv], env=env, cwd=REPO_ROOT, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_listening(port)
        tool = cfg["load_tools"]["wrk"]
        url = f"http://127.0.0.1:{port}/"
        pin_client = ["taskset", "-c", ",".join(map(str, profile.client_cpus))]
        warm = loadgen.build_argv(tool, loadgen.tool_values(profile, concurrency, url, duration=profile.warmup))
        subprocess.run([*pin_client, *warm], capture_output=True, env=env, check=False)
        measured = loadgen.build_argv(tool, loadgen.tool_values(profile, concurrency, url))
        done = subprocess.run([*pin_client, *measured], capture_output=True, text=True, env=env, check=False)
        return wrk_requests_per_s(done.stdout)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=10)
        subprocess.run(["rm", "-rf", str(rundir)], check=False)


def framework_run(cfg: dict, server: str, concurrency: int, workdir: Path, index: int) -> float:
    base = workdir / f"{server}-{index}"
    record = run_cell(
        cfg, Cell("default", "wrk", server, concurrency, index), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    if record["status"] != "ok":
        raise RuntimeError(f"{server}: {record['reason']}")
    return record["load"]["requests_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--servers", nargs="+", default=["nginx-baseline", "fastwsgi", "uwsgi-psgi", "gunicorn", "starman"]
    )
    parser.add_argument("--rounds", type=int, default=5, help="ABAB pairs (hand run, then cell)")
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--fairness", choices=["connections", "off"], default="connections")
    args = parser.parse_args()
    cfg = config.load(REPO_ROOT / "config.yaml")
    cfg["profiles"]["default"].update(duration=args.duration, fairness=args.fairness, time_wait_max=10**6)
    os.environ["PATH"] = run_env()["PATH"]
    print(f"c={args.concurrency}, {args.duration:g} s runs, {args.rounds} ABAB pairs; ratio = cell / hand run")
    print(f"{'server':<16} {'hand req/s':>12} {'cell req/s':>12} {'median ratio':>13} {'ratios min–max':>16}")
    with tempfile.TemporaryDirectory() as workdir:
        for server in args.servers:
            hand, framework = [], []
            for index in range(1, args.rounds + 1):
                hand.append(hand_run(cfg, server, args.concurrency))
                framework.append(framework_run(cfg, server, args.concurrency, Path(workdir), index))
            ratios = [f / h for f, h in zip(framework, hand, strict=True)]
            ratio = statistics.median(ratios)
            print(
                f"{server:<16} {statistics.median(hand):>12,.0f} {statistics.median(framework):>12,.0f} "
                f"{ratio:>13.3f} {min(ratios):>8.3f}–{max(ratios):.3f}  {'ok' if abs(ratio - 1) <= 0.03 else 'OUTSIDE'}"
            )


if __name__ == "__main__":
    main()
