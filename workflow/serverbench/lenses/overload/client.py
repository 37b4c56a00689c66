"""One stretch of open-loop load from oha's rate mode (``-q``: it holds an arrival rate, each
request's latency from when it was due, ``--latency-correction``), every request counted by what
it met at the client (words.Met).

oha writes two things of one run: its JSON report (``-o``), whose ``errorDistribution`` names every
request that got no answer (refused, reset, timed out), and a row per answered request
(``--db-url``: due time, end and status), from which answers are told within the objective or late
(from when they were due) and 5xx, and windows of the run are read after a burst (recovery.py).
What it could not send is the requests due at the rate less the ones it sent. ``-w`` waits for the
requests in flight at the end (up to the client's timeout): a slow answer is late, not cut.

oha's ``-c`` bounds the requests in flight, so a client with too few connections, not the server,
would limit what is offered past capacity (each request holds its connection until answered or
timed out). ``connections_for_rate`` sizes them from the rate times the longest a request may
take (the client's timeout), bounded by the open-file cap oha inherits; a stretch whose sent rate
still falls short of its scheduled rate by more than a stated share is ``client_limited``."""

from __future__ import annotations

import json
import math
import re
import resource
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from serverbench.lenses.overload.words import Client, Met

# oha's error messages, first match wins ("connection reset" must not read as refused).
ERROR_CLASSES = (
    (Met.TIMED_OUT, re.compile(r"timed out|timeout|deadline")),
    (Met.REFUSED, re.compile(r"refused")),
    (Met.RESET, re.compile(r"reset|closed|broken pipe|incomplete|eof|connection error|aborted")),
)


FILES_KEPT = 64  # descriptors oha holds beside its connections (its report, rows, runtime)


def open_file_cap() -> int:
    """The open files a child may hold (RLIMIT_NOFILE's soft limit, which oha inherits)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connections_for_rate(rate: float, longest_s: float, cap: int | None = None) -> int:
    """Connections enough for every request due at ``rate`` to be in flight for ``longest_s``
    (a server that answers none before the client gives up holds rate × longest_s at once), at
    most the open-file cap less what oha keeps besides."""
    most = max(1, (open_file_cap() if cap is None else cap) - FILES_KEPT)
    return max(1, min(most, math.ceil(rate * longest_s) + 1))


def met_of_error(message: str) -> Met:
    """What a request oha names in its error distribution met."""
    text = message.lower()
    return next((met for met, pattern in ERROR_CLASSES if pattern.search(text)), Met.OTHER)


@dataclass(frozen=True, order=True)
class Answer:
    """One answered request: due and ended in seconds from the run's start, its status."""

    due_s: float
    ended_s: float
    status: int

    @property
    def latency_s(self) -> float:
        return self.ended_s - self.due_s


@dataclass
class Offered:
    """What one stretch of load met: the counts by words.Met, the answers, the errors as named."""

    rate: float
    seconds: float
    client: str
    counts: dict[str, int] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)  # oha's own words, kept as it said them
    exit_code: int = 0
    due: int = 0  # requests due at the rate over the seconds (two clients together: both's)
    connections: int = 0  # oha's -c (two clients together: both's)
    client_limited: bool = False  # sent short of the scheduled rate by more than the stated share

    @property
    def sent(self) -> int:
        return self.due - self.counts.get(Met.NEVER_SENT, 0)

    @property
    def offered_rate(self) -> float:
        """The scheduled rate over the stretch: requests due per second."""
        return round(self.due / self.seconds, 2) if self.seconds else 0.0

    @property
    def sent_rate(self) -> float:
        return round(self.sent / self.seconds, 2) if self.seconds else 0.0


def oha_argv(
    oha: str,
    url: str,
    rate: float,
    seconds: float,
    client: Client,
    connections: int,
    timeout_s: float,
    report: Path,
    rows: Path,
    connect_timeout_s: float | None = None,
) -> list[str]:
    """oha at ``rate`` for ``seconds``, its report and rows to files; the connect timeout the
    request's unless given."""
    argv = [oha, "--no-tui", "--output-format", "json", "-o", str(report), "--db-url", str(rows)]
    argv += ["-z", f"{seconds:g}s", "-w", "-q", f"{rate:g}", "--latency-correction", "-c", str(connections)]
    argv += ["-t", f"{timeout_s:g}s", "--connect-timeout", f"{connect_timeout_s or timeout_s:g}s"]
    if client == Client.FRESH:
        argv.append("--disable-keepalive")
    return [*argv, url]


def count(
    rate: float,
    seconds: float,
    client: str,
    report: dict,
    answers: list[Answer],
    objective_s: float,
    exit_code: int = 0,
    connections: int = 0,
    shortfall: float = 0.05,
) -> Offered:
    """Every request of a stretch by what it met (the module's docstring); client-limited where it
    sent fewer than (1 - ``shortfall``) of the requests due."""
    counts = dict.fromkeys(map(str, Met), 0)
    for answer in answers:
        if answer.status >= 500:
            counts[Met.SHED] += 1
        else:
            counts[Met.WITHIN if answer.latency_s <= objective_s else Met.LATE] += 1
    errors = {str(message): int(n) for message, n in (report.get("errorDistribution") or {}).items()}
    for message, n in errors.items():
        counts[met_of_error(message)] += n
    due = round(rate * seconds)
    counts[Met.NEVER_SENT] = max(0, due - sum(counts.values()))
    limited = due - counts[Met.NEVER_SENT] < (1 - shortfall) * due
    return Offered(rate, seconds, client, counts, answers, errors, exit_code, due, connections, limited)


def read_answers(rows: Path) -> list[Answer]:
    """oha's rows: each answered request's due time (its start less the latency correction's
    wait), end and status, by due time."""
    if not rows.exists():
        return []
    with sqlite3.connect(rows) as db:
        found = db.execute("SELECT COALESCE(start_latency_correction, start), end, status FROM oha").fetchall()
    return sorted(Answer(float(due), float(end), int(status)) for due, end, status in found)


def offer(
    oha: str,
    url: str,
    rate: float,
    seconds: float,
    client: Client,
    connections: int,
    timeout_s: float,
    objective_s: float,
    log=None,
    connect_timeout_s: float | None = None,
    shortfall: float = 0.05,
) -> Offered:
    """Run one stretch and count it; oha's own output goes to ``log`` (a file open for writing)."""
    with tempfile.TemporaryDirectory(prefix="overload-") as work:
        report, rows = Path(work) / "report.json", Path(work) / "rows.db"
        argv = oha_argv(oha, url, rate, seconds, client, connections, timeout_s, report, rows, connect_timeout_s)
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=seconds + 2 * timeout_s + 30,
            check=False,
        )
        if log is not None:
            log.write(f"serverbench: {' '.join(argv)}\n{done.stdout}{done.stderr}")
        parsed = json.loads(report.read_text()) if report.exists() and report.stat().st_size else {}
        found = read_answers(rows)
        return count(rate, seconds, str(client), parsed, found, objective_s, done.returncode, connections, shortfall)
