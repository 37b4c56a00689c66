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

# h2load and ab never exit against some servers that stall: bounded.
TIMEOUT_S = 1800
_H2LOAD_REQUESTS = re.compile(r"^requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded", re.M)
_H2LOAD_2XX = re.compile(r"^status codes: (\d+) 2xx", re.M)
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

    def argv(self, url: str, requests: int, connections: int) -> list[str]:
        if self.program == "h2load":
            return ["h2load", "--h1", "-n", str(requests), "-c", str(connections), "-t", "1", url]
        return ["ab", "-q", "-n", str(requests), "-c", str(connections), url]

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


def run(client: Client, wrap, url: str, requests: int, cpus: list[int], raw: Path, connections: int = 1) -> None:
    """``requests`` answers from ``connections`` at once, the client pinned to ``cpus`` and
    run through ``wrap`` (the server's network); its output written to ``raw``."""
    argv = ["taskset", "-c", ",".join(map(str, cpus)), *client.argv(url, requests, connections)]
    try:
        done = subprocess.run(wrap(argv), capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CellFailed(f"{client.program} did not finish {requests} requests in {TIMEOUT_S // 60} minutes") from None
    raw.write_text(done.stdout + done.stderr)
    counted = client.answered(done.stdout)
    if counted is None:
        raise CellFailed(f"{client.program} printed no counts (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    answers, ok = counted
    if answers != requests or ok != requests:
        raise CellFailed(
            f"{client.program} ({client.connections}) got {answers} answers of {requests}, {ok} of them 2xx"
        )
