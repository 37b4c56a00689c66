"""Fidelity: does the harness measure what a careful person measures by hand?

For each server, back to back and alternating, it runs
  (a) a serverbench cell (isolation, verify, warm-up, monitor, and fairness
      read from the sockets during the load, as by default), and
  (b) a plain hand run: the same server argv (rendered by the harness's own
      placeholder code) pinned with taskset, a readiness poll, the same warm-up,
      idle CPUs held to the same wake-up latency (serverbench.host.cpuidle),
      and the same wrk command line pinned to the client CPU, read from wrk's
      own "Requests/sec:" line,
and reports the ratio of the medians of requests/s. Target: within ±3%.

    .venv/bin/python benchmarks/fidelity.py [--servers nginx-baseline fastwsgi feersum] [--rounds 10]
        [--duration 5] [--concurrency 100]

The ratio is taken pair by pair (each cell against the hand run beside it);
the order inside a pair alternates (hand–cell, then cell–hand), so a drift of
the machine over the run, or a cost the first run of a pair pays for the
second, falls on both sides alike. The median of the pair ratios is reported
with their range and a bootstrap confidence interval of that median, and after
each server the machine's own steadiness (serverbench.host.steadiness): where a CPU
runs at half speed for part of the time, pairs scatter by that much.
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

from serverbench import REPO_ROOT
from serverbench.cell import loadgen, servers
from serverbench.cell.launch import render, server_values
from serverbench.cell.phases import run_cell
from serverbench.host import steadiness as hostspeed
from serverbench.host.cpuidle import IdleLatencyHold
from serverbench.host.runenv import make_rundir, run_env
from serverbench.plan import apps, config
from serverbench.plan.shapes import Cell
from serverbench.report.machine import steadiness_sentence
from serverbench.tables import estimates


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
    """The same server argv and wrk command line as a cell, pinned with taskset, on a host
    tuned alike (idle CPUs held to the profile's wake-up latency); nothing else."""
    profile = config.effective_profile(cfg, "default")
    with IdleLatencyHold(profile.cpu_latency_us):
        return _hand_run(cfg, profile, server, concurrency)


def _hand_run(cfg: dict, profile, server: str, concurrency: int) -> float:
    port = servers.free_port()
    rundir = make_rundir()
    spec = cfg["catalogue"][server]
    app = apps.app_values(cfg, apps.chosen(cfg)[1], spec["language"], str(rundir / "apps"))
    values = server_values(profile, "127.0.0.1", port, rundir, app)
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
        # The ceiling, the fastest Python and Perl servers of the catalogue here, two slow ones.
        "--servers",
        nargs="+",
        default=["nginx-baseline", "fastwsgi", "feersum", "gunicorn", "starman"],
    )
    parser.add_argument("--rounds", type=int, default=10, help="pairs (hand–cell, then cell–hand, …)")
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--fairness", choices=["connections", "off"], default="connections")
    args = parser.parse_args()
    cfg = config.load(REPO_ROOT / "config.yaml")
    cfg["profiles"]["default"].update(duration=args.duration, fairness=args.fairness, time_wait_max=10**6)
    os.environ["PATH"] = run_env()["PATH"]
    print(f"c={args.concurrency}, {args.duration:g} s runs, {args.rounds} pairs; ratio = cell / hand run")
    print(
        f"{'server':<16} {'hand req/s':>12} {'cell req/s':>12} {'median ratio':>13} {'95% CI':>13} "
        f"{'ratios min–max':>16}"
    )
    with tempfile.TemporaryDirectory() as workdir:
        for server in args.servers:
            hand, framework = [], []
            for index in range(1, args.rounds + 1):
                for side in ("hand", "cell") if index % 2 else ("cell", "hand"):
                    if side == "hand":
                        hand.append(hand_run(cfg, server, args.concurrency))
                    else:
                        framework.append(framework_run(cfg, server, args.concurrency, Path(workdir), index))
            report(server, hand, framework)
            # The noise floor beside it: pairs scatter at least as much as the CPUs' speed does.
            print("   ", steadiness_sentence(hostspeed.check(sorted(os.sched_getaffinity(0)), 3)), flush=True)


def report(server: str, hand: list[float], framework: list[float]) -> None:
    ratios = [f / h for f, h in zip(framework, hand, strict=True)]
    ratio = statistics.median(ratios)
    low, high = estimates.median_ci(ratios, 0.95, seed=0)
    print(
        f"{server:<16} {statistics.median(hand):>12,.0f} {statistics.median(framework):>12,.0f} "
        f"{ratio:>13.3f} {low:>6.3f}–{high:.3f} {min(ratios):>8.3f}–{max(ratios):.3f}  "
        f"{'ok' if abs(ratio - 1) <= 0.03 else 'OUTSIDE'}",
        flush=True,
    )


if __name__ == "__main__":
    main()
