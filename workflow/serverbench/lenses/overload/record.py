"""The overload lens's record: one server past its capacity, frozen and versioned
(``OVERLOAD_SCHEMA``), written once when its job ends. Each condition (a backlog) keeps its
capacity and every stretch of load: its counts by what each request met, the p99 of what was
answered, the goodput, the server's side (its accept queue's depth sampled, its processes' CPU
and PSS), and after the burst the recovery."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from serverbench.record.vocabulary import Status

OVERLOAD_SCHEMA = "serverbench.overload/2"  # 2: the client sized and flagged, the server's side, the hangs


@dataclass(frozen=True)
class Stretch:
    """One stretch of open-loop load: which, at what multiple of capacity and rate (the burst's: its
    peak, over the after-rate's seconds), by which client, how many requests were due."""

    phase: str
    multiple: float
    rate: float
    seconds: float
    due: int
    client: str
    repeat: int = 0  # which of the multiple's stretches (the judged multiple is offered several times)
    connections: int = 0  # oha's -c, sized from the rate (the burst's: both clients')
    offered_rate: float = 0.0  # requests due per second over the stretch
    sent_rate: float = 0.0  # requests sent per second (due less never sent)
    client_limited: bool = False  # the client sent short of the schedule by more than the stated share
    counts: dict = field(default_factory=dict)  # {words.Met: requests}
    errors: dict = field(default_factory=dict)  # oha's own words for the failed ones
    answered_p99_ms: float | None = None
    goodput_rps: float | None = None  # answers within the objective per second of the stretch
    queue_max: int | None = None  # the accept queue's deepest sample (None: no listener seen)
    queue: tuple = ()  # (seconds, depth) samples
    # The server's processes over the stretch (cell.monitor's summary: cpu_s, cpu_percent,
    # pss_peak_bytes, pss_mean_bytes, processes_max, samples); empty: not sampled.
    server_side: dict = field(default_factory=dict)
    recovery_s: float | None = None  # the burst only: seconds until the after-rate is met again
    recovered: bool | None = None


@dataclass(frozen=True)
class Condition:
    """The server at one backlog: how it listened, its capacity at the objective, its stretches."""

    backlog: str
    status: Status = Status.OK
    reason: str | None = None
    asked_backlog: int | None = None  # None: the server's own (its argv without it)
    listen_backlog: int | None = None  # as the kernel applies it (ss)
    somaxconn: dict | None = None  # {"before": n, "during": n, "raised": bool}
    capacity_rps: float | None = None
    stretches: tuple[Stretch, ...] = ()


@dataclass(frozen=True)
class OverloadResult:
    schema: str
    profile: str
    server: str
    language: str
    workload: str
    objective_p99_ms: float
    status: Status = Status.OK
    reason: str | None = None
    conditions: tuple[Condition, ...] = ()
    seconds: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    settings: dict = field(default_factory=dict)  # the profile's `overload` as the job read it
    hangs: tuple = ()  # hang.HangRun's: the server at its own request timeout and at the set one

    def to_dict(self) -> dict:
        """As written to JSON (tuples as lists, the words as their strings): what the job returns."""
        return json.loads(json.dumps(asdict(self)))
