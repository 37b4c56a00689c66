"""The sections of a cell's record: each a declared type, built from its JSON
object and written back to the same layout (``Section``)."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field, fields, is_dataclass

ERROR_CLASSES = ("connect", "read", "write", "timeout", "non_2xx", "other")
LATENCY_KEYS = ("mean", "stdev", "max", "p50", "p75", "p90", "p99", "p99_9")


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
    a kind (floats, ints, strings, bools, lists, dicts) to its field names, in order.
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
    app: str | None = None  # the app its server hosted (plan.apps); None before schema /7


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
    dicts="control stop log_error",
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


DatabaseSection = optional_section(
    "DatabaseSection",
    "The database the app used (serverbench.cell.database): where it ran and, where it counts"
    " them, the statements the app's role ran during the load against what its answers need"
    " (storage: where the cluster's data lived, memory or disk).",
    strings="engine version placement storage stop shortfall",
    lists="cpus",
    floats="ready_s needed_per_request statements_per_request",
    ints="statements rows answers",
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
    framing: str | None = None  # how the answer's end is known: a vocabulary.Framing (None before it was recorded)
    body_bytes: int | None = None
    keepalive: str | None = None
    headers: dict = field(default_factory=dict)
    # The workload's header rules (expect.headers: TechEmpower's Server and Date) not met. Kept
    # apart from ``problems``: a cell is measured all the same (uWSGI sends neither header, a
    # server's doing, not the app's), and the advise profile recommends no setting that misses them.
    rule_problems: list[str] = field(default_factory=list)

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

# --- Sections that were untyped dicts before this version (their layout unchanged) --------
# Open-ended: keys a section does not declare (from an older record) are kept in ``extra``.

Order = optional_section(
    "Order",
    "The run's seed, the round the cell was measured in, and where it stood in the seeded order (1 = first).",
    True,
    ints="seed round position",
)
Harness = optional_section(
    "Harness",
    "The harness: its version and interpreter, the CPUs it was placed on, and the CPU it used there.",
    True,
    strings="version python",
    lists="cpus",
    floats="cpu_s",
)
HostSection = optional_section(
    "HostSection",
    "The machine the cell ran on: its name, CPU model, kernel and boot, and the scheduler's job"
    " that placed it there (Slurm's job id, where a cluster ran it).",
    True,
    strings="hostname cpu_model kernel boot_id scheduler_job",
)
WorkloadSection = optional_section(
    "WorkloadSection",
    "The app workload asked for, and its path; a mixed workload's paths and their weights.",
    True,
    strings="name path",
    dicts="mix",
)
Raw = optional_section(
    "Raw", "The files beside the record: the load tool's output and the server's log.", True, strings="load server_log"
)
TimeWait = optional_section(
    "TimeWait",
    "Sockets (or ports) in TIME_WAIT before and after the drain before the cell, its limit, the wait.",
    True,
    ints="before after limit",
    floats="waited_s",
    strings="counted",
)
NetworkSection = optional_section(
    "NetworkSection",
    "Where the server was reached: loopback, or a network namespace over a veth pair.",
    True,
    strings="mode namespace server_address client_address link",
)
IsolationSection = optional_section(
    "IsolationSection",
    "How the server was isolated (cgroup or container): the method, its limits, whether they were enforced.",
    True,
    strings="method problem container container_id",
    bools="limits_enforced",
    lists="cpus cgroups server_cpus client_cpus",
    ints="memory_limit_bytes nofile",
    floats="cpu_quota",
)
Image = optional_section(
    "Image",
    "The container image the server ran in (isolation: docker).",
    True,
    strings="tag digest log",
    bools="built",
    floats="build_s",
)
Scaling = optional_section(
    "Scaling",
    "What the profile asked for, and whether it was scaled down to this host.",
    True,
    dicts="asked",
    bools="scaled",
    lists="notes",
)
Warmup = optional_section(
    "Warmup",
    "The unmeasured warm-up: its wall time, exit code, and whether it was killed.",
    True,
    floats="wall_s",
    ints="exit_code",
    bools="timed_out",
)
OpenLoop = optional_section(
    "OpenLoop",
    "A rate cell's plan (the fraction of its server's capacity offered, for how long) and outcome (the rate held,"
    " what was not sent on schedule, how many answers p99.9 rests on).",
    True,
    floats="fraction capacity_rps offered_rps duration_s achieved_rps achieved_share",
    lists="capacity_ci",
    strings="capacity_tool",
    ints="capacity_concurrency tail_samples_wanted sent not_sent above_p99_9",
)
LittlesLaw = optional_section(
    "LittlesLaw",
    "req/s × mean latency against the connections open (a closed loop keeps every one in flight).",
    True,
    ints="connections",
    floats="implied_in_flight ratio",
    bools="mean_latency_corrected_by_tool",
)
ConnectionsCheck = optional_section(
    "ConnectionsCheck",
    "Connections asked of the tool, and the most seen established.",
    True,
    ints="asked established_max",
)


@dataclass
class Checks(Section):
    """The self-checks of a run (serverbench.cell.selfcheck)."""

    littles_law: LittlesLaw | None = None
    connections: ConnectionsCheck | None = None
    extra: dict = field(default_factory=dict)


Steady = optional_section(
    "Steady",
    "Requests/s in each whole second of the run, read from the client's sockets, and their spread.",
    True,
    strings="status reason",
    floats="bin_s from_s cv",
    lists="series_rps",
)
Windows = optional_section(
    "Windows",
    "Answers completed in each short window of the run, with each window's measured duration"
    " (serverbench.cell.windows), and the run's own full-speed figure from them.",
    True,
    strings="status reason source",
    floats="window_s quantile bytes_per_answer full_speed_rps near_top_share",
    lists="durations_s answers",
)
CpuIdle = optional_section(
    "CpuIdle",
    "The wake-up latency held for idle CPUs during the cell, and the idle states they entered.",
    True,
    ints="requested_us",
    bools="held",
    strings="reason driver governor",
    dicts="entered",
)


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
