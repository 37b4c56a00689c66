"""The declared shapes of the plan: a ``Cell`` (one measured job, and the one
path format of its files) and a ``Profile`` (a profile resolved for this host,
typed; its defaults come from the config schema, applied when the config is
validated)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_WORKLOAD = "hello"

# A cell's files below results/cells/; also the bench rule's wildcard pattern.
CELL_PATH = "{profile}/{workload}/{tool}/{server}/c{concurrency}/r{repeat}"
# A rate cell (open loop at a fraction of the server's capacity): the bench_rate rule's pattern.
RATE_CELL_PATH = "{profile}/{workload}/{tool}/{server}/c{concurrency}/f{fraction}/r{repeat}"


@dataclass(frozen=True)
class Target:
    """What a server is started for, whichever job starts it (a timed cell, the work lens, an
    operations life, the conformance probes): a profile's server hosting that profile's app,
    answering one of its workloads."""

    profile: str
    server: str
    workload: str = DEFAULT_WORKLOAD


@dataclass(frozen=True)
class Cell:
    """One measured job: a server under one load at one repeat. A rate cell
    (``fraction`` set) offers that fraction of the server's measured capacity
    at a constant rate (open loop); the others are closed-loop cells."""

    profile: str
    tool: str
    server: str
    concurrency: int
    repeat: int
    workload: str = DEFAULT_WORKLOAD
    fraction: float | None = None

    @property
    def relpath(self) -> str:
        if self.fraction is None:
            return CELL_PATH.format(**dataclasses.asdict(self))
        return RATE_CELL_PATH.format(**{**dataclasses.asdict(self), "fraction": f"{self.fraction:g}"})

    @property
    def is_rate(self) -> bool:
        return self.fraction is not None

    @property
    def target(self) -> Target:
        """What this cell's server is started for (every job kind starts one for a Target)."""
        return Target(self.profile, self.server, self.workload)

    @classmethod
    def from_wildcards(cls, wildcards) -> Cell:
        fraction = getattr(wildcards, "fraction", None)
        return cls(
            profile=wildcards.profile,
            tool=wildcards.tool,
            server=wildcards.server,
            concurrency=int(wildcards.concurrency),
            repeat=int(wildcards.repeat),
            workload=wildcards.workload,
            fraction=float(fraction) if fraction is not None else None,
        )


@dataclass(frozen=True)
class Profile:
    """A profile as measured on this host: every key of the schema's profile,
    CPU lists and worker counts resolved, memory in bytes (``scaling`` says
    what was asked and whether it was scaled down)."""

    name: str
    description: str
    study: str | None
    servers: list[str]
    tools: list[str]
    workloads: list[str]
    app: str | None
    server_spread: bool
    database: dict  # {engine: sqlite or a key of `databases`, cpus: server or client} (cell.database)
    concurrency: list[int]
    repeats: int
    margin: float | dict | None
    precision: float | None
    min_repeats: int | None
    max_repeats: int | None
    measuring_budget: float | None  # seconds (with precision): no round started that would pass it
    rounds_at_once: int
    work: bool | list[str]  # every workload's work counted, or only these workloads'
    duration: float
    requests: int
    rate: float | None
    warmup: float
    timeout: float
    workers: int
    workers_min: int
    worker_idle_timeout: int
    threads: int
    client_threads: int | None
    client_cpu_quota: float | None
    backlog: int
    server_cpus: list[int]
    client_cpus: list[int]
    harness_cpus: list[int]
    scale_down: bool
    network: str
    isolation: str
    memory_limit: int | None
    ready_timeout: float
    stop_grace: float
    sample_interval: float
    idle_after: float
    run_deadline: float | None
    fairness: str
    fairness_duration: float
    time_wait_max: int
    cpu_latency_us: int | None
    open_loop: dict | None
    scaling: dict
    expanded_from: str | None = None  # the profile of several `apps` this one (NAME-APP) came from
    # Every lens's settings by its profile key (its folder's settings.schema.yaml): its typed
    # class (``Lens.settings``) parsed from the validated settings, None where not asked.
    lens_settings: Mapping[str, object] = dataclasses.field(default_factory=dict)
    # The profile keys of the lenses whose settings shape the timed cells (``Lens.conditions``).
    lens_conditions: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, name: str, data: dict, declared: Mapping[str, LensDeclared] | None = None) -> Profile:
        """A resolved profile typed; ``declared``: each lens's settings class and conditions rule
        by profile key (plan.schema.declared_settings), its settings parsed once here."""
        fields = {field.name for field in dataclasses.fields(cls)}
        declared = declared or {}
        lens_settings = {
            key: declared[key].parse(value) if key in declared else value
            for key, value in data.items()
            if key not in fields
        }
        conditions = tuple(sorted(key for key, lens in declared.items() if lens.conditions))
        core = {key: value for key, value in data.items() if key in fields}
        return cls(name=name, **core, lens_settings=lens_settings, lens_conditions=conditions)

    def settings(self, key: str):
        """The settings of the lens asked for by ``key`` (typed), None where this profile does not ask."""
        return self.lens_settings.get(key)

    @property
    def planned_repeats(self) -> int:
        """Repeats every cell gets: all of them, or the first before precision is judged."""
        return (self.min_repeats or self.repeats) if self.precision else self.repeats

    def rounds_after(self, rounds: int) -> list[int]:
        """The rounds a precision checkpoint at ``rounds`` adds when a comparison is still
        open: ``rounds_at_once`` more (as many as run side by side), up to ``max_repeats``."""
        limit = self.max_repeats or self.repeats
        return list(range(rounds + 1, min(rounds + self.rounds_at_once, limit) + 1))

    def tool_deadline(self, duration: float) -> float:
        """Seconds one load tool run of ``duration`` may take before it is killed (``run_deadline``, else
        from the duration)."""
        return self.run_deadline or duration + self.warmup + 10 * self.timeout + 60

    def runtime_minutes(self) -> int:
        """An upper bound of one cell's wall time, for executors that need one."""
        seconds = (
            self.ready_timeout
            + self.warmup
            + self.duration
            + self.idle_after
            + (self.open_loop["max_duration"] if self.open_loop else 0)
            + (self.fairness_duration if self.fairness == "h2load" else 0)
            + 2 * self.stop_grace
            + 10 * self.timeout
            + (2 * self.run_deadline if self.run_deadline else 0)
            + 90  # the TIME_WAIT drain's deadline
            + 60
        )
        return max(1, -(-int(seconds) // 60))

    def memory_mb(self) -> int:
        """The server's memory limit plus room for the load tool and the harness."""
        return (self.memory_limit or 2 * 1024**3) // 2**20 + 1024

    def counts_work(self, workload: str) -> bool:
        """Whether the work lens counts this workload (``work``: true, or a list naming it)."""
        return self.work is True or (isinstance(self.work, list) and workload in self.work)

    def measuring_conditions(self) -> dict:
        """What shapes a cell's measurement (the matrix's own lists left out): the core's keys and
        the settings of each lens that declares they shape the cells (``Lens.conditions``)."""
        out = dataclasses.asdict(dataclasses.replace(self, lens_settings={}))
        matrix_keys = (
            "servers",
            "tools",
            "workloads",
            "concurrency",
            "repeats",
            "min_repeats",
            "max_repeats",
            "measuring_budget",
            "rounds_at_once",
            "work",
            "lens_settings",
            "lens_conditions",
        )
        for key in ("name", "description", "precision", *matrix_keys):
            out.pop(key)
        for key in self.lens_conditions:
            found = self.settings(key)
            out[key] = found.to_dict() if isinstance(found, LensSettings) else found
        return out


@dataclass(frozen=True)
class LensDeclared:
    """What a lens declares of its settings (its entry's ``settings`` and ``conditions``)."""

    settings: type | None
    conditions: bool

    def parse(self, value):
        """The validated settings typed (None: not asked; no class: as validated)."""
        if value is None or self.settings is None:
            return value
        return self.settings.from_dict(value)


class LensSettings:
    """A lens's typed settings (its folder's settings.py, frozen dataclass fields named as its
    schema's keys): parsed from the validated dict, lists as tuples, and written back as it (the
    conditions digest hashes that dict). A nested shape overrides ``from_dict``/``to_dict``."""

    @classmethod
    def from_dict(cls, data: Mapping):
        values = {}
        for field in dataclasses.fields(cls):
            if field.name in data:
                values[field.name] = _frozen(data[field.name])
        return cls(**values)

    def to_dict(self) -> dict:
        return {field.name: _thawed(getattr(self, field.name)) for field in dataclasses.fields(self)}


def _frozen(value):
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return {key: _frozen(item) for key, item in value.items()}
    return value


def _thawed(value):
    if isinstance(value, tuple):
        return [_thawed(item) for item in value]
    if isinstance(value, dict):
        return {key: _thawed(item) for key, item in value.items()}
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value):
        return _thawed(dataclasses.asdict(value))
    return value
