"""The settings search of one server (the ``advise`` profile): ``AdviceRecord``, versioned
(``ADVICE_SCHEMA``), frozen and assembled once when the search ends.

Every setting measured is a ``Point`` (a setting measured again from a fresh start is one
more, its ``role`` saying why); its capacity at the objective rests on ``Step``s, each one
open-loop run at an offered rate whose p99 met the objective or did not. The raw output of
every load-tool run is kept beside the record (``raw``: the file and each run's header in it).
A record of ``serverbench.advice/1`` (no roles, no reproduction) or ``/2`` (no CPU limit, no
throttling, no p99 at capacity) is read as before.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum

from serverbench.record.capacity import Limit, Step
from serverbench.record.vocabulary import Status

ADVICE_SCHEMA = "serverbench.advice/3"
READ_SCHEMAS = ("serverbench.advice/1", "serverbench.advice/2", ADVICE_SCHEMA)


class Role(StrEnum):
    """Why a setting was measured (each reading a fresh start of the server)."""

    SEARCH = "search"  # the search's first reading of the setting
    CONFIRM = "confirm"  # once more, where its first reading would have ended a walk
    # After the search: the recommended setting and its runner-up from their deployed files.
    REPRODUCE = "reproduce"


class ReloadOutcome(StrEnum):
    """The reload under load at the chosen setting."""

    CLEAN = "clean"  # no request failed on reload
    FAILED_REQUESTS = "failed requests"  # requests failed while reloading
    BROKEN = "broken"  # the server died or stopped answering after a reload
    NOT_DECLARED = "not declared"  # the catalogue declares no graceful reload
    NOT_MEASURED = "not measured"  # no setting to reload at (none was eligible)


@dataclass(frozen=True)
class Point:
    """One setting measured: its capacity at the objective (``met_rps`` the highest offered rate
    that met it, ``missed_rps`` the lowest that did not), the tree's memory under that load."""

    model: str
    workers: int
    threads: int
    status: Status
    reason: str | None
    peak_rps: float | None  # the closed loop's rate: where the rates offered start
    connections: int  # of the open-loop client
    met_rps: float
    missed_rps: float | None
    limit: Limit | None
    memory_bytes: int | None  # PSS of the server tree at the highest rate that met the objective
    steps: tuple[Step, ...]
    rule_of_thumb: bool  # the setting the rule of thumb gives
    seconds: float
    role: Role = Role.SEARCH
    p99_ms: float | None = None  # at the highest rate that met the objective
    # Under a CPU limit: the quota its cgroup held, read back (CPUs' worth), and over the rates
    # offered the CFS periods it ran in, those it was throttled in, and the time it waited.
    cpu_quota: float | None = None
    periods: int | None = None
    throttled_periods: int | None = None
    throttled_s: float | None = None


@dataclass(frozen=True)
class ReloadCheck:
    """Reloads under closed-loop load at one setting (operations' machinery)."""

    model: str
    workers: int
    threads: int
    outcome: ReloadOutcome
    reloads: int
    failed: int  # requests failed in the reloads' windows (a reused keep-alive dropped not counted)
    dropped_reused: int
    control_failed: int  # failed in the window before the first reload
    longest_gap_s: float | None
    reason: str | None


@dataclass(frozen=True)
class AdviceRecord:
    """One server's search for one profile: its inputs, every point, the reload check."""

    schema: str
    profile: str
    server: str
    language: str
    app: str
    workload: str
    objective_p99_ms: float
    memory_budget_bytes: int | None
    margin: float  # capacities told apart only beyond it (plan.search)
    cpus: int  # the server's CPUs (the machine emulated; under a CPU limit, the host's)
    memory_limit_bytes: int | None  # the server cgroup's limit
    models: tuple[str, ...]
    status: Status
    reason: str | None
    points: tuple[Point, ...]
    reload: ReloadCheck | None
    raw: str | None = None  # the raw output file beside the record
    seconds: float = 0.0
    # The worker models whose search wanted a setting after its point budget was spent.
    stopped_at_budget: tuple[str, ...] = ()
    # Per model, the fixed recycling its settings ran with (`advise.recycle`): {argv, reason}.
    recycling: dict = field(default_factory=dict)
    cpu_limit: float | None = None  # CPUs' worth of time its cgroup was held to (advise.cpu_limit)

    def to_dict(self) -> dict:
        return asdict(self)


def point_from_dict(data: dict) -> Point:
    steps = tuple(Step(**step) for step in data["steps"])
    limit = Limit(data["limit"]) if data.get("limit") else None
    role = Role(data.get("role", Role.SEARCH))
    return Point(**{**data, "status": Status(data["status"]), "limit": limit, "steps": steps, "role": role})


def load_advice(data: dict) -> AdviceRecord:
    """A record as written (``to_dict``), typed again."""
    if data.get("schema") not in READ_SCHEMAS:
        raise ValueError(f"not an advice record of {' or '.join(READ_SCHEMAS)}: {data.get('schema')!r}")
    reload = data.get("reload")
    return AdviceRecord(
        **{
            **data,
            "status": Status(data["status"]),
            "models": tuple(data["models"]),
            "stopped_at_budget": tuple(data.get("stopped_at_budget", ())),
            "points": tuple(point_from_dict(p) for p in data["points"]),
            "reload": ReloadCheck(**{**reload, "outcome": ReloadOutcome(reload["outcome"])}) if reload else None,
        }
    )


class Verdict(StrEnum):
    """What the advice says of a server."""

    RECOMMENDED = "recommended"  # its best setting, within the budget, reloads without failing requests
    NOT_RECOMMENDED = "not recommended"  # the reason why not (objective never met, reload, no setting started)
    NOT_MEASURED = "not measured"  # could not be measured here (skipped: the app lacks its language)


class Bound(StrEnum):
    """What held the recommended setting's capacity."""

    OBJECTIVE = "objective"  # more workers or threads did not meet the objective at a higher rate
    BUDGET = "memory budget"  # a setting over the budget did clearly more
    POINTS = "point budget"  # the search wanted more settings than advise.max_points: still rising


class Reproduced(StrEnum):
    """The recommended setting measured again from its deployed file, against the search's interval
    widened by the margin (``decide.margins.side``)."""

    YES = "reproduced"
    LOWER = "lower than searched"
    HIGHER = "higher than searched"
    NOT_MEASURED = "not measured"  # no deployed file (the catalogue gives no `deploy`), or it failed
