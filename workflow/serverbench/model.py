"""The declared shapes of serverbench's data, in one place.

- ``Cell``: one measured job, and the one path format of its files.
- ``Profile``: a profile resolved for this host (typed; its defaults come
  from the config schema, applied when the config is validated).
- ``CellRecord``: the result of one cell, versioned (``RECORD_SCHEMA``). The
  JSON layout is the dataclasses' fields in order; ``load_record`` refuses a
  record whose schema it does not know.
- The column names of the tables (``RUN_COLUMNS``, ``CELL_KEYS``).

This module imports nothing of serverbench, so every other module may use it.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path

DEFAULT_WORKLOAD = "hello"
# /2 added load.latency_note, warmup, checks, steady, thresholds, client.cpu_quota,
# limits.listen_backlog, harness placement and None for error classes a tool cannot
# observe; /3 added cell.fraction, open_loop and latency_ms.p99_9 (rate cells).
# Older records read with those unset.
RECORD_SCHEMA = "serverbench.cell/4"
KNOWN_RECORD_SCHEMAS = frozenset({"serverbench.cell/1", "serverbench.cell/2", "serverbench.cell/3", RECORD_SCHEMA})
STATUSES = ("ok", "failed", "skipped")
ERROR_CLASSES = ("connect", "read", "write", "timeout", "non_2xx", "other")
LATENCY_KEYS = ("mean", "stdev", "max", "p50", "p75", "p90", "p99", "p99_9")

# A cell's files below results/cells/; also the bench rule's wildcard pattern.
CELL_PATH = "{profile}/{workload}/{tool}/{server}/c{concurrency}/r{repeat}"
# A rate cell (open loop at a fraction of the server's capacity): the bench_rate rule's pattern.
RATE_CELL_PATH = "{profile}/{workload}/{tool}/{server}/c{concurrency}/f{fraction}/r{repeat}"


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
    concurrency: list[int]
    repeats: int
    precision: float | None
    min_repeats: int | None
    max_repeats: int | None
    duration: float
    requests: int
    rate: float | None
    warmup: float
    timeout: float
    workers: int
    workers_min: int
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
    fairness: str
    fairness_duration: float
    time_wait_max: int
    cpu_latency_us: int | None
    open_loop: dict | None
    scaling: dict

    @classmethod
    def from_dict(cls, name: str, data: dict) -> Profile:
        return cls(name=name, **data)

    @property
    def planned_repeats(self) -> int:
        """Repeats every cell gets: all of them, or the first before precision is judged."""
        return (self.min_repeats or self.repeats) if self.precision else self.repeats

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
            + 90  # the TIME_WAIT drain's deadline
            + 60
        )
        return max(1, -(-int(seconds) // 60))

    def memory_mb(self) -> int:
        """The server's memory limit plus room for the load tool and the harness."""
        return (self.memory_limit or 2 * 1024**3) // 2**20 + 1024

    def measuring_conditions(self) -> dict:
        """What shapes a cell's measurement (the matrix's own lists left out)."""
        out = dataclasses.asdict(self)
        matrix_keys = ("servers", "tools", "workloads", "concurrency", "repeats", "min_repeats", "max_repeats")
        for key in ("name", "description", "precision", *matrix_keys):
            out.pop(key)
        return out


# --- The result record -------------------------------------------------------


class RecordError(ValueError):
    """A record this version of serverbench cannot read."""


class Section:
    """A part of the record: built from its JSON object, written back to the same layout."""

    @classmethod
    def from_dict(cls, data: dict):
        return _build(cls, data)

    def to_dict(self) -> dict:
        return _dump(self)


def optional_section(name: str, doc: str, open_ended: bool = False, **kinds) -> type:
    """A record section whose every field may be missing (None): ``kinds`` maps
    a kind (floats, ints, strings, bools, lists) to its field names, in order.
    An open-ended section keeps keys it does not declare in ``extra``."""
    types = {"floats": float, "ints": int, "strings": str, "bools": bool, "lists": list}
    declared = []
    for kind, names in kinds.items():
        names = names.split() if isinstance(names, str) else names
        declared += [(field_name, types[kind] | None, field(default=None)) for field_name in names]
    if open_ended:
        declared.append(("extra", dict, field(default_factory=dict)))
    section = dataclasses.make_dataclass(name, declared, bases=(Section,), namespace={"__module__": __name__})
    section.__doc__ = doc
    return section


@dataclass
class RecordCell(Section):
    profile: str
    tool: str
    server: str
    language: str
    family: str | None
    workload: str
    concurrency: int
    repeat: int
    fraction: float | None = None


Latency = optional_section("Latency", "Milliseconds; None where the tool did not measure it.", floats=LATENCY_KEYS)


ErrorCounts = dataclasses.make_dataclass(
    "ErrorCounts",
    [(name, int | None, 0) for name in ERROR_CLASSES],
    bases=(Section,),
    namespace={"__module__": __name__},
)
ErrorCounts.__doc__ = "Failed requests by class (serverbench.parsers); None where the tool cannot observe a class."


@dataclass
class LoadResult(Section):
    """One schema for every load tool (serverbench.parsers)."""

    source: str | None = None
    requests: int | None = None
    duration_s: float | None = None
    requests_per_s: float | None = None
    latency_ms: Latency = field(default_factory=Latency)
    latency_note: str | None = None
    transfer_bytes: int | None = None
    errors: ErrorCounts = field(default_factory=ErrorCounts)
    errors_detail: dict = field(default_factory=dict)
    errors_total: int = 0
    error_rate: float | None = None


Usage = optional_section(
    "Usage",
    "The server tree's CPU and memory over the measured run (serverbench.monitor).",
    floats="wall_s cpu_s cpu_percent cpu_percent_of_allotment sample_interval_s sampler_cpu_s"
    " cpus_busy_s foreign_cpu_s foreign_cpu_share",
    ints="rss_peak_bytes rss_mean_bytes pss_peak_bytes pss_mean_bytes uss_peak_bytes cgroup_memory_peak_bytes"
    " processes_max processes_min threads_max samples",
)


Autoscale = optional_section(
    "Autoscale",
    "How the server's process count moved under load and after it (serverbench.monitor).",
    ints="processes_start processes_peak processes_end_of_load processes_idle_min processes_idle_end",
    floats="time_to_peak_s idle_observed_s time_to_scale_down_s",
    bools="scaled_up",
)


@dataclass
class ServerSection(Section):
    argv: list[str] = field(default_factory=list)
    files: dict = field(default_factory=dict)
    backend_argv: list[str] | None = None
    docker_argv: list[str] | None = None
    host: str | None = None
    port: int | None = None
    version: str | None = None
    interpreter: str | None = None
    control: dict | None = None
    ready_s: float | None = None
    pid: int | None = None
    usage: Usage = field(default_factory=Usage)
    samples: list[dict] = field(default_factory=list)
    autoscale: Autoscale = field(default_factory=Autoscale)
    stop: dict | None = None
    oom_kills: int | None = None


ClientSection = optional_section(
    "ClientSection",
    "The load tool's run: its argv and version, exit code, wall and CPU time.",
    lists="argv",
    strings="version",
    ints="exit_code",
    floats="cpu_quota wall_s cpu_s cpu_percent",
    bools="timed_out",
)


@dataclass
class Verification(Section):
    """The answer checked before the load (serverbench.verify)."""

    ok: bool = False
    problems: list[str] = field(default_factory=list)
    status: int | None = None
    http_version: str | None = None
    content_type: str | None = None
    content_length: int | None = None
    chunked: bool = False
    body_bytes: int | None = None
    keepalive: str | None = None
    headers: dict = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return "; ".join(self.problems)


Fairness = optional_section(
    "Fairness",
    "How evenly connections were served (serverbench.fairness); the method's own"
    " figures (shares, windows, h2load's report) are kept in ``extra``.",
    strings="status method reason",
    floats="min_over_mean",
    ints="starved_connections",
    open_ended=True,
)


Limits = optional_section(
    "Limits",
    "The listen backlog asked, the kernel's cap, the backlog read from the server's listening socket,"
    " the one that counts (read, else asked and capped), and the open-file limit.",
    ints="backlog somaxconn listen_backlog effective_backlog nofile",
)


@dataclass
class CellRecord(Section):
    cell: RecordCell
    schema: str = RECORD_SCHEMA
    status: str = "failed"
    reason: str | None = "harness did not finish the cell"
    phase: str | None = None
    load: LoadResult | None = None
    server: ServerSection = field(default_factory=ServerSection)
    client: ClientSection = field(default_factory=ClientSection)
    isolation: dict = field(default_factory=dict)
    verify: Verification | None = None
    timing: dict[str, float] = field(default_factory=dict)
    raw: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    harness: dict | None = None
    order: dict | None = None
    config_sha256: str | None = None
    environment: str | None = None
    scaling: dict | None = None
    workload: dict | None = None
    time_wait: dict | None = None
    network: dict | None = None
    limits: Limits | None = None
    isolation_image: dict | str | None = None  # images.Image (a tag alone in records before cell/3)
    fairness: Fairness | None = None
    warmup: dict | None = None
    checks: dict | None = None
    steady: dict | None = None
    open_loop: dict | None = None
    cpu_idle: dict | None = None  # cpuidle.IdleLatencyHold.describe()
    thresholds: dict | None = None
    traceback: str | None = None

    @classmethod
    def new(cls, cell: Cell, language: str, family: str | None = None) -> CellRecord:
        return cls(cell=RecordCell(**_cell_fields(cell), language=language, family=family))

    @classmethod
    def from_dict(cls, data: dict) -> CellRecord:
        schema = data.get("schema")
        if schema not in KNOWN_RECORD_SCHEMAS:
            raise RecordError(
                f"unknown record schema {schema!r}; this serverbench reads {sorted(KNOWN_RECORD_SCHEMAS)}"
            )
        return _build(cls, data)


def _cell_fields(cell: Cell) -> dict:
    return dataclasses.asdict(cell)


def load_record(path: str | Path) -> CellRecord:
    """A cell's result from its JSON file; RecordError names the file when it cannot be read."""
    try:
        return CellRecord.from_dict(json.loads(Path(path).read_text()))
    except RecordError as exc:
        raise RecordError(f"{path}: {exc}") from None


def _section_type(hint) -> type | None:
    """The dataclass inside a field's type (``X`` or ``X | None``), if any."""
    for candidate in (hint, *typing.get_args(hint)):
        if is_dataclass(candidate):
            return candidate
    return None


def _build(cls: type, data: dict):
    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    values, extra = {}, {}
    for key, value in data.items():
        if key in names and key != "extra":
            section = _section_type(hints[key])
            values[key] = _build(section, value) if section and isinstance(value, dict) else value
        else:
            extra[key] = value
    if extra:
        if "extra" not in names:
            raise RecordError(f"{cls.__name__} has no field(s) {', '.join(sorted(extra))}")
        values["extra"] = extra
    try:
        return cls(**values)
    except TypeError as exc:
        raise RecordError(f"{cls.__name__}: {exc}") from None


def _dump(obj) -> dict:
    out = {}
    for item in fields(obj):
        value = getattr(obj, item.name)
        if item.name == "extra":
            out.update(value)
        else:
            out[item.name] = _dump(value) if is_dataclass(value) else value
    return out


# --- Table columns -------------------------------------------------------------

# What identifies a cell in the tables (a row of summary.csv; runs.csv adds repeat).
CELL_KEYS = ["profile", "workload", "tool", "server", "language", "concurrency"]
RUN_COLUMNS = [
    "workload", "profile", "tool", "server", "language", "family", "concurrency", "repeat", "status", "reason",
    "requests", "duration_s", "rps",
    "latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_max_ms",
    "transfer_bytes", "errors_total", "error_rate", *(f"errors_{name}" for name in ERROR_CLASSES),
    "server_cpu_s", "server_cpu_percent", "server_rss_peak_mb", "server_rss_mean_mb", "server_pss_peak_mb",
    "server_processes_max", "workers_start", "workers_peak", "time_to_peak_s", "time_to_scale_down_s",
    "server_cpus", "scaled", "client_cpu_percent", "keepalive", "fairness_min_over_mean", "starved_connections",
    "http_version", "server_version", "interpreter", "flags", "job_start", "job_end", "result",
]  # fmt: skip
# Columns of runs.csv that summary.csv averages over the ok repeats (trimmed mean, with min and max beside).
AVERAGED_COLUMNS = [
    "latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "error_rate",
    "server_cpu_percent", "server_rss_peak_mb", "server_pss_peak_mb", "client_cpu_percent",
    "fairness_min_over_mean", "workers_peak", "time_to_peak_s", "time_to_scale_down_s",
]  # fmt: skip
# Columns of runs.csv that describe the cell rather than a repeat: summary.csv keeps the first.
CONTEXT_COLUMNS = ["family", "keepalive", "http_version", "server_version", "interpreter", "server_cpus", "scaled"]
RPS_COLUMNS = ["rps_trimmed_mean", "rps_median", "rps_ci_low", "rps_ci_high", "rps_min", "rps_max", "rps_cv"]
# The CI half-width of the median as a share of it; the profile's target (precision); whether it was met.
PRECISION_COLUMNS = ["precision_reached", "precision_target", "precision_met"]
# The median p99 latency of the repeats with its bootstrap interval.
P99_COLUMNS = ["latency_p99_median", "latency_p99_ci_low", "latency_p99_ci_high"]
# A server's capacity and knee where rate cells ran (serverbench.latency), on its capacity cell's row.
KNEE_COLUMNS = [
    "capacity_rps", "capacity_ci_low", "capacity_ci_high", "knee_fraction", "knee_rps", "knee_p99_ms", "knee_note",
]  # fmt: skip
SUMMARY_COLUMNS = [
    *CELL_KEYS,
    "repeats",
    "repeats_ok",
    "status",
    "reason",
    *RPS_COLUMNS,
    *PRECISION_COLUMNS,
    *P99_COLUMNS,
    *(name for column in AVERAGED_COLUMNS for name in (column, f"{column}_min", f"{column}_max")),
    "flags",
    *CONTEXT_COLUMNS,
    *KNEE_COLUMNS,
]
WORKER_COLUMNS = [*CELL_KEYS, "family", "repeat", "t", "phase", "processes", "threads", "rss_mb"]
STEADY_COLUMNS = [*CELL_KEYS, "family", "repeat", "second", "rps"]
