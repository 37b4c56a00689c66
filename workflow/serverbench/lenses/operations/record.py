"""The operations lens's record: a server's lives (cold start, memory idle and loaded, balance,
reloads under load), frozen and versioned (``OPERATIONS_SCHEMA``), written once when its job ends."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum

from serverbench.record.vocabulary import Status

OPERATIONS_SCHEMA = "serverbench.operations/2"  # /2: scales, and a scaling server's step of load


class OperationsMetric(StrEnum):
    """What the lens judges a comparison on (its ``lens.Words``)."""

    OPERATIONS = "operations"  # a check of a server in operation (decide.JUDGED)


class ReloadStatus(StrEnum):
    """The reload check's statuses beside the core's (its ``lens.Words``): cell.underload writes
    them in a life's ``reload``, the table in its reload rows' `status`."""

    # Measured, and the server died or stopped answering after its reloads: a finding of the
    # check (reload_alive's figure stands, the reason says how it broke), not a failed job.
    BROKEN = "broken"
    NOT_DECLARED = "not declared"  # the catalogue declares no graceful reload: nothing to trigger


@dataclass(frozen=True)
class Life:
    """One start of the server: its worker count, cold start and idle memory."""

    round: int
    workers: int
    cold_start_s: float | None = None
    listening_s: float | None = None  # the port accepted a connection (the cells' readiness)
    processes: list[dict] = field(default_factory=list)  # pid, name, pss_bytes, uss_bytes
    pss_bytes: int | None = None
    uss_bytes: int | None = None
    status: Status = Status.OK
    reason: str | None = None
    balance: dict | None = None
    reload: dict | None = None
    step: dict | None = None  # a scaling server's processes and PSS over an idle-load-idle step


@dataclass(frozen=True)
class OperationsResult:
    schema: str
    profile: str
    server: str
    language: str
    workload: str
    status: Status = Status.OK  # skipped or failed: the server could not be started at all
    reason: str | None = None
    reload_trigger: dict | None = None  # the catalogue's `reload`, None: the server has none
    workers_vary: bool = False  # the command takes {workers}: a worker's memory can be told
    scales: bool = False  # the command or templates take {workers_min}: it scales its workers
    lives: tuple[Life, ...] = ()
    seconds: float | None = None
    started_at: float | None = None
    ended_at: float | None = None

    def to_dict(self) -> dict:
        """As written to JSON (the lives a list)."""
        return {**asdict(self), "lives": [asdict(life) for life in self.lives]}
