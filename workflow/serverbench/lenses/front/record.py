"""Does the server need a front? One server's job (the ``front`` profile): ``FrontRecord``,
versioned (``FRONT_SCHEMA``), frozen and assembled once when the job ends.

A job runs a server bare and behind each front it is deployed with (each a ``Deployment``,
with the timeouts it applies to a client), side by side; every ``Run`` is the normal
clients' closed loop under one ``Condition`` (fast clients only, or beside slow clients of
one kind and count), with the slow clients' own account (``SlowAccount``). The raw output of
every client run is kept beside the record (``raw``: the file and each run's header in it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum

from serverbench.record.vocabulary import Outcome, Status

# The `b` of a comparison of a deployment with its own normal clients alone (no other side).
ALONE = "its rate alone"
# The pooled comparison: slow senders, bodies and readers together (decide.front).
EVERY_SLOW_KIND = "every slow kind"

FRONT_SCHEMA = "serverbench.front/1"


class FrontKind(StrEnum):
    """The lens's kind of comparison (its ``lens.Words``)."""

    FRONT = "front"  # a server behind a front against itself bare (decide)


class FrontMetric(StrEnum):
    """What the lens judges a comparison on (its ``lens.Words``)."""

    KEPT = "rate kept beside slow clients"  # the normal clients' share of their rate alone (decide)


class SlowKind(StrEnum):
    """The clients beside the normal ones (docs/front.md says what each does on the wire)."""

    NONE = "fast clients only"
    SENDERS = "slow senders"  # request headers a byte at a time
    BODY = "slow body"  # a POST's body 16 bytes at a time
    READERS = "slow readers"  # an 8 MiB answer read 1 KiB at a time through a 4 KiB buffer
    NEW_CONNECTIONS = "new connections"  # clients that connect for every request

    def counted(self, count: int) -> str:
        """``count`` of these clients as a sentence says it: 1 slow sender, 2 slow bodies."""
        one, many = _COUNTED[self]
        return f"{count} {one if count == 1 else many}"


_COUNTED = {
    SlowKind.NONE: ("fast client only", "fast clients only"),
    SlowKind.SENDERS: ("slow sender", "slow senders"),
    SlowKind.BODY: ("slow body", "slow bodies"),
    SlowKind.READERS: ("slow reader", "slow readers"),
    SlowKind.NEW_CONNECTIONS: ("new connection", "new connections"),
}


class Relative(StrEnum):
    """How many slow clients, against the requests the server holds at once (workers × threads)."""

    FEWER = "fewer"  # one less, at least one
    AS_MANY = "as many"
    MORE = "more"  # twice as many


class SlowOutcome(StrEnum):
    """How a slow connection ended."""

    HELD = "held"  # still open when the client let go at the end of its hold
    ANSWERED = "answered"  # the server (or the front) answered it
    CLOSED = "closed"  # closed by the server or the front before the end: a timeout defeated it
    REFUSED = "refused"  # the connection was not accepted


@dataclass(frozen=True)
class Condition:
    kind: SlowKind
    relative: Relative | None = None
    count: int = 0

    def label(self) -> str:
        if self.kind is SlowKind.NONE:
            return str(self.kind)
        return f"{self.kind.counted(self.count)} ({self.relative} than the workers)".replace(
            "as many than", "as many as"
        )


@dataclass(frozen=True)
class SlowAccount:
    """What the slow clients (or the connection-per-request clients) met, by their own account."""

    outcomes: dict[str, int]  # SlowOutcome → connections; new connections: answered/failed requests
    held_s_median: float | None  # how long a slow connection was held (by the server or the front)
    first_closed_s: float | None  # the earliest a server's or front's timeout closed one
    busy_share: float | None  # the client's CPU time over its wall time: a slow client is not a busy one
    raw_header: str


@dataclass(frozen=True)
class Run:
    """The normal clients' closed loop beside one condition, on one deployment, in one round."""

    deployment: str
    round: int
    condition: Condition
    requests: int | None
    rps: float | None
    p99_ms: float | None
    failed: int  # errors of every kind, the requests cut off when the run ended among them
    timed_out: int  # requests that took longer than the client's timeout
    cut_off: int  # requests still waiting when the run ended (a server that answered nothing)
    duration_s: float
    pss_bytes: int | None  # the deployment's whole tree (the front's processes in it), after the run
    slow: SlowAccount | None
    raw_header: str


@dataclass(frozen=True)
class Deployment:
    """One way the server ran: bare, or behind a front over a protocol."""

    name: str
    front: str | None  # None: bare
    protocol: str | None
    upstream_keepalive: bool | None
    status: Status
    reason: str | None
    server_version: str | None
    front_version: str | None
    timeouts: dict[str, float]  # the app server's, as its command leaves them
    front_timeouts: dict[str, float]  # the front's, as its config sets them
    front_workers: int | None


@dataclass(frozen=True)
class FrontRecord:
    schema: str
    profile: str
    server: str
    language: str
    app: str
    workload: str
    workers: int
    threads: int
    holds_at_once: int  # workers × threads: what the slow clients' counts are relative to
    cpus: list[int]  # the server's CPUs, the front's processes on them too
    clients: int
    client_timeout_s: float
    pace_s: float
    deployments: tuple[Deployment, ...]
    runs: tuple[Run, ...]
    status: Status
    reason: str | None
    raw: str
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def load_front(data: dict) -> FrontRecord:
    """A record read back from its JSON."""
    runs = []
    for run in data["runs"]:
        condition = run["condition"]
        relative = condition["relative"]
        slow = run["slow"]
        read = Condition(SlowKind(condition["kind"]), relative and Relative(relative), condition["count"])
        runs.append(Run(**{**run, "condition": read, "slow": SlowAccount(**slow) if slow else None}))
    deployments = tuple(Deployment(**{**d, "status": Status(d["status"])}) for d in data["deployments"])
    return FrontRecord(**{**data, "status": Status(data["status"]), "deployments": deployments, "runs": tuple(runs)})


class FrontAnswer(StrEnum):
    """A server's answer to "does it need a front?" (decide.front)."""

    NEEDS = "needs a front"  # behind the front, the normal clients kept clearly more beside slow ones
    NOT_NEEDED = "does not need one"  # bare, it kept its rate beside every slow client measured
    UNDETERMINED = Outcome.UNDETERMINED
