"""Planted extra CPU work per request: the ground truth of serverbench's positive
controls (catalogue variants such as ``gunicorn-gthread-plus5``).

``SERVERBENCH_EXTRA_SHARE`` (0.05: 5%) asks for that share of the hello's own
cost added to every answer. Both are measured in place, on the first requests
(the warm-up's), as the worker process's CPU time per request in batches of
``BATCH``, the cheapest batch taken (the machine at full speed), so the
server's own HTTP handling in the process is counted, not only the app's few
lines:

1. ``BATCHES`` batches as they are: the hello's own cost;
2. ``BATCHES`` batches with a trial spin of ``TRIAL_SHARE`` of that cost, or of
   ``SHARE`` if larger (its
   loop count from the spin's speed timed at import): the cost of one loop
   iteration *in place*. Timed apart from the server, a loop iteration ran
   2.3 times faster than between requests (a cold cache after every switch
   between the workers and the kernel), and a "5%" variant cost 10% more CPU
   per request;
3. from then on, ``SHARE`` × the hello's cost in loop iterations per answer.

``SERVERBENCH_EXTRA_ITERATIONS`` instead fixes the loop count: no calibration,
the same extra work at every start (the work lens, which counts instructions,
plants its variants so; a count calibrated by time would differ per start).

Each worker writes its calibration to stderr (the server's log, kept beside the
cell's record). Its true effect on throughput is still what the run measures
(the cells' server CPU-µs per request), not its loop count.
"""

import os
import sys
import time

SHARE = float(os.environ.get("SERVERBENCH_EXTRA_SHARE") or 0)
FIXED_ITERATIONS = os.environ.get("SERVERBENCH_EXTRA_ITERATIONS")
# Requests per calibration batch; batches per calibration step. Each worker calibrates on its
# first 2 × BATCH × BATCHES answers, which cannot all fall inside a cell's warm-up: a worker that
# got no connection in the warm-up meets its first requests in the measured windows, whose
# fastest ones the full-speed estimate reads (at 2,000, and again at 640, a 10× variant's first
# windows ran at the hello's speed). So calibration is short (40 answers as they are), and the
# trial spin is the planted share itself when that is larger than TRIAL_SHARE: from the 41st
# answer on, a worker does about its planted work.
BATCH, BATCHES = 10, 4
TRIAL_SHARE = 0.3
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
    """Counts requests, calibrates on the first ``2 × BATCH × BATCHES``, then spins on every one."""

    def __init__(self, share: float):
        self.share = share
        self.rate = _iterations_per_us() if share else 0.0
        self.seen, self.mark = 0, time.process_time()
        self.cheapest = [float("inf"), float("inf")]  # CPU s per request: as it is, with the trial spin
        self.trial: int | None = None
        self.iterations: int | None = None

    def __call__(self) -> None:
        if not self.share:
            return
        if self.iterations is not None:
            spin(self.iterations)
            return
        if self.trial:
            spin(self.trial)
        self.seen += 1
        if self.seen % BATCH:
            return
        now = time.process_time()
        step = 0 if self.trial is None else 1
        self.cheapest[step], self.mark = min(self.cheapest[step], (now - self.mark) / BATCH), now
        if self.seen == BATCH * BATCHES:
            self.trial = max(1, round(max(TRIAL_SHARE, self.share) * self.cheapest[0] * 1e6 * self.rate))
        elif self.seen == 2 * BATCH * BATCHES:
            self._settle()

    def _settle(self) -> None:
        cost_us, with_trial_us = self.cheapest[0] * 1e6, self.cheapest[1] * 1e6
        per_iteration_us = (with_trial_us - cost_us) / self.trial
        how = "in place"
        if per_iteration_us <= 0:  # the batches' noise swamped the trial: fall back on the timed loop
            per_iteration_us, how = 1 / self.rate, "timed apart (the trial was lost in the noise)"
        self.iterations = round(self.share * cost_us / per_iteration_us)
        print(
            f"serverbench extra work (pid {os.getpid()}): hello costs {cost_us:.1f} CPU-µs per request here;"
            f" a loop iteration {per_iteration_us * 1000:.1f} ns {how} ({1000 / self.rate:.1f} ns timed apart);"
            f" {self.share:.1%} of the hello's cost is {self.iterations} iterations",
            file=sys.stderr,
            flush=True,
        )
        self.trial = None


def count_up(iterations: int) -> None:
    """The fixed work's loop: an empty one, so that 1% of a light server's answer is a few
    iterations (about 190 instructions each under CPython 3.11, 117 inlined as FixedWork
    runs it; ``spin``'s are about 800)."""
    for _ in range(iterations):
        pass


class FixedWork:
    """A fixed number of ``count_up`` iterations per answer (``SERVERBENCH_EXTRA_ITERATIONS``)."""

    def __init__(self, iterations: int):
        self.iterations = iterations

    def __call__(self) -> None:
        for _ in range(self.iterations):  # count_up's loop inlined: no call's cost beside it
            pass


extra_work = FixedWork(int(FIXED_ITERATIONS)) if FIXED_ITERATIONS else ExtraWork(SHARE)
