"""Planted extra CPU work per request: the ground truth of serverbench's positive
controls (catalogue variants such as ``gunicorn-gthread-plus5``).

``SERVERBENCH_EXTRA_SHARE`` (0.05: 5%) asks for that share of the hello's own
cost added to every answer. The hello's own cost is the worker process's CPU
time per request, measured by the app itself on its first requests (the
warm-up's), without extra work: batches of ``BATCH`` requests, the cheapest
batch taken (the machine at full speed), so the server's own HTTP handling in
the process is counted, not just the app's few lines. The spin loop's speed is
calibrated the same way at import (the fastest of several timed batches). The
extra work is then a fixed number of loop iterations, written to stderr (the
server's log, kept beside the cell's record). Its true effect on throughput is
measured by the run, not assumed: the cells' server CPU-µs per request.
"""

import os
import sys
import time

SHARE = float(os.environ.get("SERVERBENCH_EXTRA_SHARE") or 0)
BATCH, BATCHES = 100, 10  # requests per calibration batch; batches before the extra work starts
SPIN_TRIALS, SPIN_ITERATIONS = 20, 20000


def spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i * i % 7
    return total


def _iterations_per_us() -> float:
    best = float("inf")
    for _ in range(SPIN_TRIALS):
        started = time.process_time()
        spin(SPIN_ITERATIONS)
        best = min(best, time.process_time() - started)
    return SPIN_ITERATIONS / max(best * 1e6, 1e-3)


class ExtraWork:
    """Counts requests, calibrates on the first ``BATCH × BATCHES``, then spins on every one."""

    def __init__(self, share: float):
        self.share = share
        self.rate = _iterations_per_us() if share else 0.0
        self.seen, self.mark, self.cheapest = 0, time.process_time(), float("inf")
        self.iterations: int | None = None

    def __call__(self) -> None:
        if not self.share:
            return
        if self.iterations is not None:
            spin(self.iterations)
            return
        self.seen += 1
        if self.seen % BATCH:
            return
        now = time.process_time()
        self.cheapest, self.mark = min(self.cheapest, (now - self.mark) / BATCH), now
        if self.seen >= BATCH * BATCHES:
            cost_us = self.cheapest * 1e6
            self.iterations = round(self.share * cost_us * self.rate)
            print(
                f"serverbench extra work (pid {os.getpid()}): hello costs {cost_us:.1f} CPU-µs per request here;"
                f" {self.share:.1%} of it is {self.iterations} loop iterations ({self.rate:.1f} per µs)",
                file=sys.stderr,
                flush=True,
            )


extra_work = ExtraWork(SHARE)
