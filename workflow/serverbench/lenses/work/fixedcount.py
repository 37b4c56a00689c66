"""A fixed number of requests, for the work lens: each must be answered with a 2xx.

The client follows the server's keep-alive behaviour (``serverbench.cell.verify``),
as wrk's cells meet it:

- a server that ``keeps`` its connections gets ``h2load --h1``: one kept-alive
  HTTP/1.1 connection per client connection, each request sent once the last
  was answered (ab's HTTP/1.0 would make some of these servers close every
  connection, and count work they never do under wrk);
- a server that closes after every answer (``closes-announced``, ``closes-silently``)
  gets ``ab``, a new connection per request: h2load does not reconnect, and gave
  up after the first few answers (uWSGI's --http router, Feersum).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from serverbench.cell.errors import CellFailed

# h2load and ab never exit against some servers that stall: bounded, as a whole and per answer.
TIMEOUT_S = 1800
STALL_S = 120  # work_lens.stall_timeout's default
_H2LOAD_REQUESTS = re.compile(r"^requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded", re.M)
_H2LOAD_2XX = re.compile(r"^status codes: (\d+) 2xx", re.M)
_H2LOAD_TIMEOUTS = re.compile(r"^requests: .*?(\d+) timeout", re.M)
_AB_COMPLETE = re.compile(r"^Complete requests:\s+(\d+)", re.M)
_AB_FAILED = re.compile(r"^Failed requests:\s+(\d+)", re.M)
_AB_NON_2XX = re.compile(r"^Non-2xx responses:\s+(\d+)", re.M)


@dataclass(frozen=True)
class Client:
    """How the counted requests reach the server."""

    program: str  # h2load | ab
    connections: str  # "kept alive" | "one per request"
    keepalive: str  # the server's behaviour, as serverbench.cell.verify found it

    @classmethod
    def for_server(cls, keepalive: str) -> Client:
        if keepalive == "keeps":
            return cls("h2load", "kept alive", keepalive)
        return cls("ab", "one per request", keepalive)

    def argv(self, url: str, requests: int, connections: int, stall_s: int = STALL_S) -> list[str]:
        """The client's command; a connection that sees no answer for ``stall_s`` seconds ends
        it (h2load waits for ever by default), so a server that stalls fails the life in time."""
        if self.program == "h2load":
            return ["h2load", "--h1", "-n", str(requests), "-c", str(connections), "-t", "1", "-N", str(stall_s), url]
        return ["ab", "-q", "-s", str(stall_s), "-n", str(requests), "-c", str(connections), url]

    def answered(self, output: str) -> tuple[int, int] | None:
        """(answers, 2xx answers) the client reports; None when it printed no counts."""
        if self.program == "h2load":
            counts, ok = _H2LOAD_REQUESTS.search(output), _H2LOAD_2XX.search(output)
            if not counts or not ok:
                return None
            return int(counts[3]), int(ok[1])
        complete, failed = _AB_COMPLETE.search(output), _AB_FAILED.search(output)
        if not complete or not failed:
            return None
        non_2xx = _AB_NON_2XX.search(output)
        answers = int(complete[1]) - int(failed[1])
        return answers, answers - (int(non_2xx[1]) if non_2xx else 0)


def run(
    client: Client, wrap, url: str, requests: int, cpus: list[int], raw: Path, connections: int = 1, stall_s=STALL_S
) -> None:
    """``requests`` answers from ``connections`` at once, the client pinned to ``cpus`` and
    run through ``wrap`` (the server's network); its output written to ``raw``. A connection
    that waits ``stall_s`` seconds for an answer ends the client (the life fails)."""
    argv = ["taskset", "-c", ",".join(map(str, cpus)), *client.argv(url, requests, connections, stall_s)]
    try:
        done = subprocess.run(wrap(argv), capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CellFailed(f"{client.program} did not finish {requests} requests in {TIMEOUT_S // 60} minutes") from None
    raw.write_text(done.stdout + done.stderr)
    stalled = f" (a connection waited {stall_s} s with no answer: work_lens.stall_timeout)" if _timed_out(done) else ""
    counted = client.answered(done.stdout)
    if counted is None:
        raise CellFailed(
            f"{client.program} printed no counts (exit {done.returncode}){stalled}: {done.stderr.strip()[-300:]}"
        )
    answers, ok = counted
    if answers != requests or ok != requests:
        raise CellFailed(
            f"{client.program} ({client.connections}) got {answers} answers of {requests}, {ok} of them 2xx{stalled}"
        )


def _timed_out(done: subprocess.CompletedProcess) -> bool:
    """Whether the client gave up on a connection that did not answer (h2load counts its
    timeouts; ab stops with APR's timeout error)."""
    counted = _H2LOAD_TIMEOUTS.search(done.stdout)
    return bool(counted and int(counted[1])) or "timeout specified has expired" in done.stderr
