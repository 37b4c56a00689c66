"""The recycle lens's record: one server's runs under load, each at one recycling setting with
one kind of client (and, behind a front, with or without upstream keep-alive), and its capacity
at a p99 objective with recycling and without; frozen and versioned (``RECYCLE_SCHEMA``),
written once when its job ends. A record of ``serverbench.recycle/1`` (no upstream, no
capacity) is read as before."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum

from serverbench.record.capacity import Limit, Step
from serverbench.record.vocabulary import Status

RECYCLE_SCHEMA = "serverbench.recycle/2"
READ_SCHEMAS = ("serverbench.recycle/1", RECYCLE_SCHEMA)


class RecycleKind(StrEnum):
    """The lens's kind of comparison (its ``lens.Words``)."""

    SETTING = "setting"  # a server at one setting against itself at another


class RecycleMetric(StrEnum):
    """What the lens judges a comparison on (its ``lens.Words``)."""

    RECYCLING = "recycling"  # what a worker's restart costs the client


class Client(StrEnum):
    """How the closed loop's connections are used (the profile's ``recycle.clients``)."""

    KEEPALIVE = "keepalive"  # every request on the connection it opened first
    FRESH = "fresh"  # a connection per request (Connection: close), as behind a front without upstream keep-alive


class Upstream(StrEnum):
    """How a front reaches the app server (the profile's ``recycle.upstream``; fronted servers only)."""

    KEEPALIVE = "keepalive"  # the front keeps its connections to the app server (nginx's `keepalive`)
    CLOSE = "close"  # a connection per request: what the app server sees is the front's, not the clients'


@dataclass(frozen=True)
class Setting:
    """A recycling setting: ``max_requests`` None is the server's own (its catalogue default, or none)."""

    max_requests: int | None = None
    jitter: int = 0
    min_lifetime_s: float | None = None  # the floor on a worker's age, where the server has one
    rss_mb: int | None = None  # a worker restarted once its resident memory passes this, where the server can

    @property
    def is_own(self) -> bool:
        """Whether it is the server's own recycling (a declared setting sets a limit: the profile's schema)."""
        return self.max_requests is None and self.rss_mb is None

    @property
    def label(self) -> str:
        """The setting as people read it (a table's `setting` column); ``is_own`` and the setting
        itself are what a program tells settings apart by."""
        if self.is_own:
            return "own"
        parts = []
        if self.max_requests is not None:
            parts.append(f"{self.max_requests}±{self.jitter}" if self.jitter else str(self.max_requests))
        if self.rss_mb is not None:
            parts.append(f"rss {self.rss_mb} MB")
        label = ", ".join(parts)
        return label + (f" ≥{self.min_lifetime_s:g}s" if self.min_lifetime_s is not None else "")


@dataclass(frozen=True)
class Restart:
    """A worker that left during the load (its process exited): when (s from the load's start),
    and what the client saw within the window around that moment."""

    pid: int
    at_s: float
    failed: int
    restarts_in_window: int  # this one and every other that left within the window of it


@dataclass(frozen=True)
class Run:
    """One start of the server at a setting, with one kind of client, and what the load showed."""

    setting: Setting
    client: Client
    upstream: Upstream | None = None  # behind a front: its connections to the app server; None: no front
    status: Status = Status.OK
    reason: str | None = None
    declared: bool = True  # False: the server cannot take the setting (the reason says which argv it lacks)
    # The limit in force (the setting's, else the server's default; None: it does not recycle),
    # and what it counts.
    limit: int | None = None
    counts: str | None = None
    argv: list[str] = field(default_factory=list)  # what the setting added to the server's command
    load_s: float | None = None
    answered: int | None = None
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    dropped_reused: int | None = None
    longest_gap_s: float | None = None
    workers_at_start: int | None = None  # the server's processes in the first sample
    restarts: list[Restart] = field(default_factory=list)
    most_away: int | None = None  # the most processes missing at one sample (against the first sample)
    p99_near_ms: float | None = None  # requests sent within the window of a restart
    p99_between_ms: float | None = None  # every other request
    failed_between: int | None = None
    seconds: list[dict] = field(default_factory=list)  # per second of load: answered, failed, p99_ms
    # Memory: the server's USS summed against the answers, before the first restart (its slope is
    # the leak); the largest process's USS in each half of the load, and the ceiling the limit
    # predicts from the leak.
    leak_bytes_per_request: float | None = None
    leak_r2: float | None = None
    leak_samples: int | None = None
    peak_first_half_bytes: int | None = None
    peak_second_half_bytes: int | None = None
    # The largest process's rise per second against a never-recycled worker's (its leak × its
    # share of the answers per second); bounded: under BOUNDED_SHARE of it.
    peak_growth_share: float | None = None
    bounded: bool | None = None
    ceiling_bytes: int | None = None
    samples: list[list] = field(default_factory=list)  # [s, answered, uss summed, {pid: uss}]


@dataclass(frozen=True)
class CapacityLife:
    """One start of the server at a setting, its capacity at the p99 objective searched by open-loop
    rates (``cell.objective``): the highest rate offered that met it and the lowest that missed it."""

    setting: Setting
    life: int  # 1, 2, ...: the lives alternate the settings
    status: Status = Status.OK
    reason: str | None = None
    declared: bool = True  # False: the server cannot take the setting
    limit: int | None = None  # the limit in force (None: it does not recycle)
    counts: str | None = None
    argv: list[str] = field(default_factory=list)
    objective_p99_ms: float | None = None
    connections: int | None = None
    peak_rps: float | None = None  # the closed loop's rate the offered rates start from
    met_rps: float | None = None
    missed_rps: float | None = None
    held_by: Limit | None = None
    memory_bytes: int | None = None  # the server tree's PSS at the highest rate that met it
    workers_left: int | None = None  # worker processes seen to leave the tree during the search
    steps: tuple[Step, ...] = ()
    raw: str | None = None  # the file beside the record with every load tool's output


@dataclass(frozen=True)
class RecycleResult:
    schema: str
    profile: str
    server: str
    language: str
    workload: str
    leaks_bytes: int | None  # the workload's planted leak per answer (None: it plants none)
    recycle: dict | None  # the catalogue's `recycle` (None: the server declares none)
    status: Status = Status.OK
    reason: str | None = None
    runs: tuple[Run, ...] = ()
    capacity: tuple[CapacityLife, ...] = ()
    seconds: float | None = None
    started_at: float | None = None
    ended_at: float | None = None

    def to_dict(self) -> dict:
        """As written to JSON (the runs a list)."""
        return {
            **asdict(self),
            "runs": [asdict(run) for run in self.runs],
            "capacity": [asdict(life) for life in self.capacity],
        }


def _run(data: dict) -> Run:
    upstream = data.get("upstream")
    return Run(
        **{
            **data,
            "setting": Setting(**data["setting"]),
            "client": Client(data["client"]),
            "upstream": Upstream(upstream) if upstream else None,
            "status": Status(data["status"]),
            "restarts": [Restart(**restart) for restart in data.get("restarts") or []],
        }
    )


def _life(data: dict) -> CapacityLife:
    held_by = data.get("held_by")
    return CapacityLife(
        **{
            **data,
            "setting": Setting(**data["setting"]),
            "status": Status(data["status"]),
            "held_by": Limit(held_by) if held_by else None,
            "steps": tuple(Step(**step) for step in data.get("steps") or ()),
        }
    )


def load_recycle(data: dict) -> RecycleResult:
    """A record as written (``to_dict``), typed again; one of ``serverbench.recycle/1`` gets no
    upstream and no capacity."""
    if data.get("schema") not in READ_SCHEMAS:
        raise ValueError(f"not a recycle record of {' or '.join(READ_SCHEMAS)}: {data.get('schema')!r}")
    return RecycleResult(
        **{
            **data,
            "status": Status(data["status"]),
            "runs": tuple(_run(run) for run in data["runs"]),
            "capacity": tuple(_life(life) for life in data.get("capacity") or ()),
        }
    )
