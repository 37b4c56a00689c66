"""How much of a round's noise is the server's start? Four identical uWSGI
servers (Debian's uwsgi-core, python3 plugin, 2 processes pinned to CPU 0, the
hello app) measured in interleaved rounds (each round all four, 2 s of
``wrk -t1 -c2`` on CPU 1 each, in a random order): two A/A pairs, one pair
started once and kept across the rounds, the other started anew before every
round (as serverbench cells are), so both pairs see the same machine.
Throughput is read in 50 ms windows of loopback bytes
divided by each window's measured duration (the pilot's method; the product
reads its client's sockets), and each trial's full-speed figure is the p95 of
its windows. Printed per mode: the sd over rounds of the log ratio of the two
servers' figures (what a round adds to an A/A comparison) and of each
server's level. Idle CPUs are held polling (/dev/cpu_dma_latency 0) as in
every cell. Run it alone on the machine.

    .venv/bin/python benchmarks/start_effect.py [--rounds 16] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import struct
import subprocess
import time

import numpy as np
from serverbench import REPO_ROOT

APP = REPO_ROOT / "apps" / "python" / "hello.py"
KEPT, RESTARTED = (18090, 18091), (18092, 18093)
WINDOW_S = 0.05


def loopback_bytes() -> int:
    with open("/proc/net/dev") as dev:
        for line in dev:
            if line.strip().startswith("lo:"):
                return int(line.split(":", 1)[1].split()[8])
    raise RuntimeError("no loopback device")


def start(port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        ["taskset", "-c", "0", "uwsgi-core", "--plugin", "python3", "--http11-socket", f"127.0.0.1:{port}",
         "--master", "--processes", "2", "--wsgi-file", str(APP), "--disable-logging", "--die-on-term"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(1.5)
    warm = ["taskset", "-c", "1", "wrk", "-t1", "-c2", "-d1s", f"http://127.0.0.1:{port}/"]
    subprocess.run(warm, capture_output=True)
    return server


def stop(servers: list[subprocess.Popen]) -> None:
    for server in servers:
        server.send_signal(signal.SIGTERM)
        server.wait()


def trial(port: int) -> float:
    """One 2 s trial's p95 of 50 ms windows (the first and last 4 windows left out)."""
    load = subprocess.Popen(["taskset", "-c", "1", "wrk", "-t1", "-c2", "-d2s", f"http://127.0.0.1:{port}/"],
                            stdout=subprocess.DEVNULL)  # fmt: skip
    return float(np.quantile(loopback_windows(load)[4:-4], 0.95))


def loopback_windows(load: subprocess.Popen) -> list[float]:
    """Loopback bytes per second in windows of WINDOW_S, each over its measured duration, while ``load`` runs."""
    windows, before, then = [], loopback_bytes(), time.perf_counter()
    while load.poll() is None:
        time.sleep(WINDOW_S)
        now_bytes, now = loopback_bytes(), time.perf_counter()
        windows.append((now_bytes - before) / (now - then))
        before, then = now_bytes, now
    return windows


def rounds(count: int, rng: random.Random) -> dict[int, np.ndarray]:
    """Each server's log figure per round, by port."""
    kept = [start(port) for port in KEPT]
    restarted: list[subprocess.Popen] = []
    out = {port: np.empty(count) for port in (*KEPT, *RESTARTED)}
    for r in range(count):
        stop(restarted)
        restarted = [start(port) for port in RESTARTED]
        for port in rng.sample(list(out), len(out)):
            out[port][r] = np.log(trial(port))
    stop(kept + restarted)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    latency = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
    os.write(latency, struct.pack("i", 0))
    os.sched_setaffinity(0, {1})
    figures = rounds(args.rounds, random.Random(args.seed))
    for mode, (a, b) in (("started once, kept", KEPT), ("started anew every round", RESTARTED)):
        ratio = figures[a] - figures[b]
        levels = ", ".join(f"{figures[port].std(ddof=1):.4f}" for port in (a, b))
        print(f"{mode}: A/A ratio {np.exp(ratio.mean()):.4f}, sd of its log over {args.rounds} rounds"
              f" {ratio.std(ddof=1):.4f}; the levels' sd {levels}")  # fmt: skip
    os.close(latency)


if __name__ == "__main__":
    main()
