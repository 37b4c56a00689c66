"""The result of one cell: ``CellRecord``, versioned (``RECORD_SCHEMA``).

The JSON layout is the dataclasses' fields in order; ``load_record`` refuses
a record whose schema it does not know and reads every older one it does.
This stage imports no other: every stage may read a record.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path

# /2 added load.latency_note, warmup, checks, steady, thresholds, client.cpu_quota,
# limits.listen_backlog, harness placement and None for error classes a tool cannot
# observe; /3 added cell.fraction, open_loop and latency_ms.p99_9 (rate cells).
# Older records read with those unset.
RECORD_SCHEMA = "serverbench.cell/4"
KNOWN_RECORD_SCHEMAS = frozenset({"serverbench.cell/1", "serverbench.cell/2", "serverbench.cell/3", RECORD_SCHEMA})
STATUSES = ("ok", "failed", "skipped")
ERROR_CLASSES = ("connect", "read", "write", "timeout", "non_2xx", "other")
LATENCY_KEYS = ("mean", "stdev", "max", "p50", "p75", "p90", "p99", "p99_9")

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
    types = {"floats": float, "ints": int, "strings": str, "bools": bool, "lists": list, "dicts": dict}
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
ErrorCounts.__doc__ = "Failed requests by class (serverbench.cell.parsers); None where the tool cannot observe a class."


@dataclass
class LoadResult(Section):
    """One schema for every load tool (serverbench.cell.parsers)."""

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
    "The server tree's CPU and memory over the measured run (serverbench.cell.monitor).",
    floats="wall_s cpu_s cpu_percent cpu_percent_of_allotment sample_interval_s sampler_cpu_s"
    " cpus_busy_s foreign_cpu_s foreign_cpu_share",
    ints="rss_peak_bytes rss_mean_bytes pss_peak_bytes pss_mean_bytes uss_peak_bytes cgroup_memory_peak_bytes"
    " processes_max processes_min threads_max samples",
)


Autoscale = optional_section(
    "Autoscale",
    "How the server's process count moved under load and after it (serverbench.cell.monitor).",
    ints="processes_start processes_peak processes_end_of_load processes_idle_min processes_idle_end",
    floats="time_to_peak_s idle_observed_s time_to_scale_down_s",
    bools="scaled_up",
)


ServerFacts = optional_section(
    "ServerFacts",
    "What the launch found out about the server: how it was started and reached, its versions, how it stopped.",
    lists="backend_argv docker_argv",
    strings="host version interpreter",
    ints="port pid oom_kills",
    floats="ready_s",
    dicts="control stop",
)


@dataclass
class ServerSection(ServerFacts):
    """The server: its argv and rendered files, its facts, and its CPU and memory over the load."""

    argv: list[str] = field(default_factory=list)
    files: dict = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    samples: list[dict] = field(default_factory=list)
    autoscale: Autoscale = field(default_factory=Autoscale)


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
    """The answer checked before the load (serverbench.cell.verify)."""

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
    "How evenly connections were served (serverbench.cell.fairness); the method's own"
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
    def from_dict(cls, data: dict) -> CellRecord:
        schema = data.get("schema")
        if schema not in KNOWN_RECORD_SCHEMAS:
            raise RecordError(
                f"unknown record schema {schema!r}; this serverbench reads {sorted(KNOWN_RECORD_SCHEMAS)}"
            )
        return _build(cls, data)


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


def cell_status(statuses) -> str:
    """A cell's status from its repeats': ``ok`` when all are, ``partial`` when some are,
    else the first of theirs (``failed`` before ``skipped``)."""
    statuses = set(statuses)
    if statuses == {"ok"}:
        return "ok"
    return "partial" if "ok" in statuses else sorted(statuses)[0]
