"""How steady the machine's CPUs are: the noise floor a run's differences are read against.

On a shared virtual machine a CPU's speed can change under the guest. On the
2-vCPU machine this was built on, the same loop pinned to one CPU took either
about 22 ms or 40-45 ms, in episodes from tens of milliseconds to seconds, on
each CPU on its own and 15-50% of the time, while /proc/stat reported no steal
time (a neighbour on the physical core, or its power budget). Inside a cell
nothing shows it: the server's and the load tool's CPU seconds grow with it.
Repeats of one cell then differ by 10-20%, and that spread is the machine's.

The check times the same small piece of work again and again on every CPU at
once, each CPU busy as under load, and tells apart two ways it can be slow:
the CPU itself ran slower (a chunk's own CPU time grew), or another task
shared the CPU (the check's wall time exceeded its CPU time). The `environment`
job runs it first and holding the bench slot, so no other job runs meanwhile.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

# About half a millisecond of work at this machine's fast speed: short against the
# episodes, long against the clocks' resolution.
CHUNK_ITERATIONS = 20_000
# A chunk is slow when it took this much more than the CPU's fast chunks.
SLOW_FACTOR = 1.25


def trace(seconds: float) -> dict:
    """(wall, CPU) seconds of each fixed chunk of work done in `seconds`, and the totals."""
    chunks, began, cpu_began = [], time.perf_counter(), time.thread_time()
    while (start := time.perf_counter()) < began + seconds:
        cpu = time.thread_time()
        total = 0
        for number in range(CHUNK_ITERATIONS):
            total += number
        chunks.append((time.perf_counter() - start, time.thread_time() - cpu))
    return {"wall_s": time.perf_counter() - began, "cpu_s": time.thread_time() - cpu_began, "chunks": chunks}


def summarise(traced: dict) -> dict:
    """How often, and by how much, one CPU's chunks ran slower than its fast ones."""
    chunks = traced["chunks"]
    cpu_times = sorted(cpu for _, cpu in chunks)
    # The fast speed: the 5th percentile, so one lucky chunk does not set it.
    fast = cpu_times[len(cpu_times) // 20]
    slowest = cpu_times[-1 - len(cpu_times) // 20]
    return {
        "chunks": len(chunks),
        "fast_chunk_ms": round(1000 * fast, 4),
        "median_chunk_ms": round(1000 * statistics.median(cpu_times), 4),
        # The CPU itself slower: the same work took more of its own time.
        "slow_share": round(sum(cpu > SLOW_FACTOR * fast for cpu in cpu_times) / len(chunks), 4),
        "slowest_over_fast": round(slowest / fast, 3),
        # Another task on the CPU: the share of the check's time it waited while that one ran.
        "waited_share": round(max(0.0, 1 - traced["cpu_s"] / traced["wall_s"]), 4),
    }


def check(cpus: list[int], seconds: float) -> dict | None:
    """Every CPU in `cpus` timed at once for `seconds` (a process pinned to each); 0 skips it."""
    if not seconds or not cpus:
        return None
    argv = [sys.executable, "-m", "serverbench.host.steadiness", str(seconds)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    started = time.time()
    children = {
        cpu: subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, preexec_fn=_pin(cpu)) for cpu in cpus
    }
    per_cpu = {}
    for cpu, child in children.items():
        out, _ = child.communicate(timeout=seconds + 30)
        per_cpu[str(cpu)] = summarise(json.loads(out))
    return {
        "seconds": seconds,
        "started_at": round(started, 3),
        "ended_at": round(time.time(), 3),
        "slow_factor": SLOW_FACTOR,
        "cpus": per_cpu,
        "slow_share_max": max(cpu["slow_share"] for cpu in per_cpu.values()),
    }


def _pin(cpu: int):
    return lambda: os.sched_setaffinity(0, {cpu})


if __name__ == "__main__":
    print(json.dumps(trace(float(sys.argv[1]))))
