"""How a cell ends other than ``ok``; importable by every phase without a loop."""

from __future__ import annotations

import contextlib
import signal


class CellFailed(Exception):
    """The server or tool misbehaved; the cell is recorded as failed.

    ``raw_text`` is the load tool's output so far, kept beside the result.
    """

    def __init__(self, reason: str, raw_text: str = ""):
        super().__init__(reason)
        self.raw_text = raw_text


class CellSkipped(Exception):
    """A program the cell needs is absent; the cell is recorded as skipped."""


class Interrupted(BaseException):
    """SIGTERM or SIGINT reached the job: stop the server, write nothing."""


def raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


@contextlib.contextmanager
def interruptible():
    """SIGTERM and SIGINT raise ``Interrupted`` while a job runs, so that its server session
    stops what it started (a server, its counters, its client) before the job ends: Snakemake
    ends a job with SIGTERM, whose default action would leave every child running."""
    previous = {sig: signal.signal(sig, raise_interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
