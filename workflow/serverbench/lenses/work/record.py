"""The work a server does per request: one (profile, server, workload)'s
``WorkRecord``, versioned (``WORK_SCHEMA``).

Every figure is a *marginal*: the counts of a server life that served
``requests[1]`` requests less those of a life that served ``requests[0]``,
divided by the difference, so start-up and shutdown cancel. The two lives
are held up for the same wall time, so what a server does by the clock (a
master's timers, a Date cache) cancels too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from serverbench.record.vocabulary import Status

# /2: each life's raw outputs named (``raw``); /3: the client that sent the requests (``client``);
# /5: every server counted with one worker (``workers``; /4 had the profile's);
# /6: a server that ignores the environment's hash seed counted with a fixed one (``tools.preload``);
# /7: a server with work_realtime at SCHED_FIFO, its client on its CPU (``tools.realtime_priority``);
# a server with work_pairs counted over that many pairs (``instructions.pair_figures``)
WORK_SCHEMA = "serverbench.work/7"


@dataclass
class ProcessWork:
    """One kind of process (by its command line): how many there were and the
    user-space instructions per request they did between them."""

    command: str
    processes: int
    instructions_per_request: float


@dataclass
class Instructions:
    """User-space instructions per request, counted by valgrind (callgrind)."""

    # Outside the interpreter's cyclic collector: the figure judged and compared. A
    # collection falls by the clock (docs/work.md), so the collector's is a figure apart.
    per_request: float
    # The objects they ran in (the interpreter, the server, libc, ...): each
    # object's path and its class from config's `work.objects`.
    by_object: dict[str, float] = field(default_factory=dict)
    by_class: dict[str, float] = field(default_factory=dict)
    by_command: list[ProcessWork] = field(default_factory=list)
    lives: dict[str, int] = field(default_factory=dict)  # requests served -> total instructions of that life
    seconds: dict[str, float] = field(default_factory=dict)  # requests served -> seconds from ready to stop
    # In the cyclic collector (callgrind.COLLECTORS) and what it called, per request (0 where
    # the interpreter has none: Perl, nginx), and each life's total there.
    collector_per_request: float = 0.0
    collector_lives: dict[str, int] = field(default_factory=dict)
    # Whether a process of the server ran CPython's collector under its own names (False:
    # no CPython, or one stripped of them, such as Debian's libpython: counted with the rest).
    collector_named: bool = False
    # Valgrind pairs counted: more than 1 where a pair's lives' collectors differed by more than
    # work_lens.collector_tolerance of the figure (the figure is the most balanced pair's), or
    # where the server asks for more (catalogue work_pairs: the figure is the median pair's).
    pairs: int = 1
    pair: int = 1  # which of them is the figure (its lives' raw outputs: "instructions-N" or "instructions-N-pairK")
    # Every pair's figure, in the order counted; a server with ``work_pairs`` keeps the median one.
    pair_figures: list[float] = field(default_factory=list)


@dataclass
class Syscalls:
    """Syscalls, context switches and CPU time per request, from lives without valgrind:
    totals from perf stat's counters, names from perf trace's summary (which may miss an
    event in tens of thousands: they need not add up to the total exactly)."""

    per_request: float
    by_name: dict[str, float] = field(default_factory=dict)  # the marginal of each syscall, most first
    context_switches_per_request: float | None = None
    cpu_us_per_request: float | None = None  # perf's task-clock (nanoseconds), timed: the host moves it
    cpu_user_us_per_request: float | None = None
    cpu_system_us_per_request: float | None = None
    lives: dict[str, dict] = field(default_factory=dict)  # requests served -> that life's totals


@dataclass
class Tools:
    """What counted: versions that must match for two runs' work to be compared."""

    valgrind: str | None = None
    perf: str | None = None
    server: str | None = None
    interpreter: str | None = None
    # The interpreter built to cooperate with valgrind (CPython's --with-valgrind), where
    # its language says how to ask (`languages.*.valgrind_build`); None: not asked.
    interpreter_with_valgrind: bool | None = None
    cpu_model: str | None = None
    glibc_tunables: str | None = None
    # A library preloaded into the server (work_lens.fixed_random, for a server that ignores
    # the environment's hash seed); None: nothing preloaded.
    preload: str | None = None
    # The SCHED_FIFO priority every life's server ran at, its client on the server's CPU in the
    # normal class (work_lens.realtime_priority); None: the host's scheduling, the client apart.
    realtime_priority: int | None = None


@dataclass
class WorkClient:
    """How the counted requests reached the server (serverbench.lenses.work.fixedcount): over one
    kept-alive connection, or a connection per request to a server that closes each."""

    program: str  # h2load | ab
    connections: str  # "kept alive" | "one per request"
    keepalive: str  # the server's keep-alive behaviour, as the cells' verification finds it


@dataclass(frozen=True)
class WorkRecord:
    """One (profile, server, workload)'s work per request, assembled once when the lens ends
    (``cell.work.run_work``) and frozen."""

    schema: str
    profile: str
    server: str
    workload: str
    language: str
    status: Status = Status.FAILED
    reason: str | None = None
    requests: list[int] = field(default_factory=list)
    instructions: Instructions | None = None
    syscalls: Syscalls | None = None
    tools: Tools = field(default_factory=Tools)
    client: WorkClient | None = None
    # The planted extra work of a variant (spin-loop iterations per answer), fixed, never calibrated.
    planted_iterations: int | None = None
    # The worker processes the server was started with in the lens (work_lens.workers).
    workers: int | None = None
    # Each life's raw outputs ("instructions-1200": files), relative to the record's directory.
    raw: dict[str, list[str]] = field(default_factory=dict)
    seconds: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
