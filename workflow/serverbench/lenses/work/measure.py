"""One server's work per request: the lens the host's speed cannot move.

A server is started as its cells would start it (same argv, cgroup, CPUs,
network), but with one worker (``work_lens.workers``: with two, which of them
the warm-up reached was a race, and the figure moved with it; ``lens_workers``)
and under a counter, and serves a fixed number of requests one at a
time, so nothing depends on who wins a race (``h2load --h1 -c1`` over one kept-alive
connection, or ``ab -c1`` for a server that closes after every answer:
``serverbench.lenses.work.fixedcount``):

1. **Instructions**, two lives under valgrind's callgrind (forks followed, no
   cache simulation, no address randomisation, fixed hash seeds, a fixed
   environment): every process's user-space instructions by object.
2. **Syscalls, context switches, CPU time**, two lives under ``perf stat``
   (exact tracepoint and software-event totals, no valgrind: it adds syscalls
   of its own), the tree's CPU times read just before the stop; and two under
   ``perf trace -s``, which names the syscalls.

A server with ``work_realtime`` (NGINX Unit's entries) runs, in every life, at
SCHED_FIFO (``work_lens.realtime_priority``) with its client on its CPU, in the
normal class: the client sends the next request only once every process of the
server has nothing left to run, so each request finds the server as quiet as the
last. With the client on a CPU of its own, whether Unit's router had finished
one request before the next arrived was a race (an event-loop turn more or less,
the allocator left in another state), and each life fell into one way or the
other. The other servers' counts did not move with it, and gunicorn's arbiter
collected by the clock in some lives and not in others under it: they keep the
host's scheduling (docs/work.md has the figures).

A valgrind pair whose lives' cyclic collectors differ by more than
``work_lens.collector_tolerance`` of the figure is counted again
(``counted_instructions``): a whole-heap collection in one life moves the work
after it too.

Each pair of lives serves ``requests`` (``counter_requests`` without valgrind,
more: CPU times come in clock ticks) ``[0]`` and ``[1]`` requests; the
marginal between them is the figure, so start-up and shutdown cancel. Before
either, every worker answers a few requests (a worker's first answer costs
far more than the next, and which worker answers first is a race). The
two lives of a pair live as long, so that what the server does by the clock
cancels too: valgrind's two run side by side, each server (and its client) on CPUs of its own,
and are stopped together once both have served (an instruction count does not
depend on the CPU's speed, and valgrind's lives are the lens's longest); perf's
run one after the other, the longer first and the shorter then held up as
long (context switches and CPU times do depend on sharing a CPU). A life whose processes did
not all leave complete counts (a worker killed, valgrind refusing the program)
gives a reason, never a figure. perf's lives come first: the first of all verifies
the server's answer and keep-alive behaviour (``fixedcount.Client``), which every
later life reuses (under valgrind the verification met a worker's first answer, seconds).

Every life's raw outputs are kept beside the record, in ``<server>.raw/<lens>-<requests>/``
(the client's output for the warm-up and the counted load, perf's CSV or summary, each
process's callgrind file gzipped), whether the life gave a figure or a reason: every
number of the record traces to its source, as a cell's do.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from serverbench import files
from serverbench.cell.errors import CellFailed, CellSkipped, interruptible
from serverbench.cell.launch import Launch, placeholders_used
from serverbench.cell.session import Ending, ServerSession, ladder
from serverbench.lenses.work import callgrind, fixedcount, perfcount, servertree, workenv, workfigures
from serverbench.lenses.work.record import (
    WORK_SCHEMA,
    Instructions,
    Syscalls,
    WorkClient,
    WorkRecord,
)
from serverbench.lenses.work.workfigures import Life
from serverbench.plan import apps
from serverbench.plan.catalogue import ServerEntry, WorkStop, server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Target
from serverbench.record.vocabulary import Status

# callgrind over every process a server forks; with setarch -R (``wrapper``) and fixed hash
# seeds (``workenv``), the same work every life.
VALGRIND = ["valgrind", "-q", "--tool=callgrind", "--trace-children=yes", "--vgdb=no", *callgrind.DUMP_BEFORE_FORK]
# The lenses, each a pair of lives: instructions (valgrind), counters (perf stat), syscall names (perf trace).
INSTRUCTIONS, COUNTERS, NAMES = "instructions", "counters", "names"
OTHER_LIFE_FAILED = "the other life of the pair failed"


def wrapper(lens: str, out: Path, priority: int | None = None, member: int = 0) -> list[str]:
    """The prefix a server's process ``member`` (a backend 0, its front 1) starts under in a
    life of ``lens``, writing into ``out`` (perf: a file per member, read together), at
    SCHED_FIFO ``priority`` (``work_lens.realtime_priority``). perf runs one above its
    server: at the server's own it waited for the server to block before it read its
    buffers, and perf trace lost events (docs/work.md)."""
    if lens == INSTRUCTIONS:
        return [*servertree.realtime(priority), "setarch", "-R", *VALGRIND, f"--callgrind-out-file={out}/callgrind.%p"]
    suffix = f".{member}" if member else ""
    counter = (
        perfcount.stat_argv(out / f"stat{suffix}.csv")
        if lens == COUNTERS
        else perfcount.trace_argv(out / f"trace{suffix}.txt")
    )
    server_at = counter.index("--") + 1
    above = priority + 1 if priority else None
    return [*servertree.realtime(above), *counter[:server_at], *servertree.realtime(priority), *counter[server_at:]]


def lens_workers(settings: dict, spec: ServerEntry, profile) -> int:
    """The worker processes a server is counted with: ``work_lens.workers``, or, for a server
    that scales its workers (its command or templates name ``{workers_min}``), one more than
    the profile's minimum: uWSGI's cheaper mode refuses a minimum as high as its maximum."""
    if "workers_min" in placeholders_used(spec):
        return max(settings["workers"], profile.workers_min + 1)
    return settings["workers"]


def _load(launch: Launch, client: fixedcount.Client, url_path: str, requests: int, cpus, raw: Path, connections=1):
    url = f"http://{launch.host}:{launch.port}{url_path}"
    stall_s = launch.config["work_lens"]["stall_timeout"]
    fixedcount.run(client, launch.network.wrap, url, requests, list(cpus), raw, connections, stall_s)


def _client(session: ServerSession, timeout: float) -> fixedcount.Client:
    """The counted requests' client, by the server's keep-alive behaviour (checked, with the
    answer, by the session's verification: a wrong answer is the life's reason)."""
    return fixedcount.Client.for_server(session.verify(timeout=timeout)[0].keepalive)


def _settle(port: int, timeout: float) -> None:
    """Wait until the server has closed every warm-up connection (none left but its listening
    socket). A server that keeps idle connections (gunicorn's gthread worker, 5 s) walks the
    ones it still holds on every answer: how many the counted load found depended on the race
    of the warm-up, and an A/A twin came out costlier than its original (docs/work.md)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = [
            c
            for c in psutil.net_connections(kind="tcp")
            if c.laddr and c.laddr.port == port and c.status not in (psutil.CONN_LISTEN, psutil.CONN_TIME_WAIT)
        ]
        if not held:
            return
        time.sleep(0.1)


class Lives:
    """Runs the lives of one server for one (profile, workload)."""

    def __init__(self, config: dict, target: Target, env: dict, log_path: Path, raw_dir: Path, kept: Path):
        self.config, self.target, self.env = config, target, env
        self.kept = kept  # where each life's raw outputs stay (the record's ``raw``)
        self.kept_files: dict[str, list[str]] = {}
        self.settings = config["work_lens"]
        spec = self.spec = server_entry(config, target.server)
        # The SCHED_FIFO priority its lives run at (``work_realtime``), None: the host's scheduling.
        self.priority = self.settings["realtime_priority"] if spec.work_realtime else None
        profile = effective_profile(config, target.profile)
        self.profile = dataclasses.replace(
            profile,
            workers=lens_workers(self.settings, spec, profile),
            ready_timeout=self.settings["ready_timeout"],
            stop_grace=self.settings["stop_grace"],
        )
        self.log_path, self.raw_dir = log_path, raw_dir
        self.url_path = apps.workloads(config, target.profile)[target.workload]["path"]
        self.found_server = None
        self.client: fixedcount.Client | None = None  # the lives' client, the same in each
        self.pair_suffix = ""  # a pair counted again keeps its raw outputs apart: "-pair2", ...

    def life(self, lens: str, requests: int, hold_s: float, cpus: list[int] | None = None, together=None) -> Life:
        """One life: start under the lens's counter (on ``cpus``, else the profile's server
        CPUs), serve, hold (``hold_s``, or until the other life at the ``together`` barrier
        has served too), stop, read its counts."""
        out = Path(tempfile.mkdtemp(prefix=f"serverbench-{lens}-", dir=self.raw_dir))
        out.chmod(0o1777)  # Unit's router and applications run as another user and write here too
        profile = dataclasses.replace(self.profile, server_cpus=list(cpus)) if cpus else self.profile
        # Every thread back in the normal class before the stop, a life that failed midway too.
        session = ServerSession(
            self.config,
            self.target,
            profile,
            self.log_path,
            self.env,
            wrapper=functools.partial(wrapper, lens, out, self.priority),
            before_stop=servertree.normal_class,
            ladder=False,  # the record's ladder (run_work) says how the lens ended
        )
        life = Life(requests, 0.0)
        try:
            with session:
                launch = session.prepare()
                if launch.in_docker:
                    raise CellSkipped("the work lens runs servers on the host (isolation: cgroup), not in containers")
                session.start()
                self.found_server = launch.found.server
                self._serve(session, lens, hold_s, out, life, together)
        finally:
            self._keep(f"{lens}-{requests}{self.pair_suffix}", out)
        stop = launch.found.server.stop
        if session.stopped_server and stop and stop.get("killed"):
            raise CellFailed(f"{stop['killed']} process(es) needed SIGKILL to stop")
        self._read(lens, out, life)
        shutil.rmtree(out, ignore_errors=True)
        placeholders = {str(session.rundir): "{rundir}", str(launch.port): "{port}"}
        for process in life.processes:  # one kind of process, whichever life: its command as a template
            for value, placeholder in placeholders.items():
                process.command = process.command.replace(value, placeholder)
        return life

    def _serve(self, session: ServerSession, lens: str, hold_s: float, out: Path, life: Life, together=None) -> None:
        """Warm up, serve the counted requests, hold, note every process seen, stop."""
        launch = session.launch
        life.seen = servertree.pids(launch)
        if self.client is None:
            # Once per server, in its first life (perf's: a worker's first answer under valgrind,
            # which the verification would meet, costs seconds); every later life has its client.
            self.client = _client(session, self.settings["ready_timeout"])
        self._warm_up(launch, self.client, out)
        _settle(launch.port, self.settings["settle_timeout"])
        life.seen |= servertree.pids(launch)
        ready = time.monotonic()
        _load(launch, self.client, self.url_path, life.requests, self._client_cpus(launch), out / "client.txt")
        if together is None:
            time.sleep(max(0.0, hold_s - (time.monotonic() - ready)))
        else:
            try:
                together.wait()
            except threading.BrokenBarrierError:
                raise CellFailed(OTHER_LIFE_FAILED) from None
        launch.check_alive(f"the {lens} life")
        life.seen |= servertree.pids(launch)
        if lens == COUNTERS:
            life.counters = servertree.tree_usage(launch)
        life.seconds = round(time.monotonic() - ready, 3)
        children_first = self.spec.work_stop is WorkStop.CHILDREN_FIRST
        servertree.stop_counted(launch, self.profile.stop_grace, children_first)

    def _warm_up(self, launch: Launch, client: fixedcount.Client, out: Path) -> None:
        """Every worker answers before anything counts: a worker's first answer costs it far more
        than the next (a Python worker's first hello: about 13 million instructions under
        uWSGI), and which worker the readiness probe or the counted connection reaches is a
        race. Twice as many connections as workers, held at once, reach every worker of a
        server that gives a connection to one worker at a time, and most others."""
        connections = 2 * self.profile.workers
        requests = connections * self.settings["warmup_requests"]
        _load(launch, client, self.url_path, requests, self._client_cpus(launch), out / "warmup.txt", connections)

    def _client_cpus(self, launch: Launch) -> list[int]:
        """Where a life's client runs: on its server's CPUs where the server runs at SCHED_FIFO
        (``work_realtime``), so that the client, in the normal class, runs only once every
        process of the server has nothing left to run, and each request finds the server the
        same, quiet; otherwise on the profile's client CPUs."""
        if self.priority:
            return list(launch.profile.server_cpus)
        return list(self.profile.client_cpus)

    def _keep(self, name: str, out: Path) -> None:
        """A copy of the life's outputs beside the record (callgrind's gzipped: a megabyte a process)."""
        dest = self.kept / name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for path in sorted(out.iterdir()):
            if not path.is_file():
                continue
            if path.name.startswith("callgrind."):
                with path.open("rb") as source, gzip.open(dest / f"{path.name}.gz", "wb") as packed:
                    shutil.copyfileobj(source, packed)
            else:
                shutil.copyfile(path, dest / path.name)
        base = self.kept.parent
        self.kept_files[name] = [str(path.relative_to(base)) for path in sorted(dest.iterdir())]

    def _read(self, lens: str, out: Path, life: Life) -> None:
        if lens == INSTRUCTIONS:
            outputs = sorted(out.glob("callgrind.*"))
            if not outputs:
                raise CellFailed("valgrind wrote no counts (did the server start under it?)")
            try:
                life.processes = callgrind.read_processes(outputs)
            except callgrind.CallgrindError as exc:
                raise CellFailed(f"a process left no complete count (killed before it wrote it?): {exc}") from None
            lost = sorted(life.seen - {process.pid for process in life.processes})
            if lost:
                raise CellFailed(f"process(es) {lost} of the server wrote no counts (killed before they could?)")
            return
        try:
            # A file per process started (a backend and its front: both counted).
            if lens == COUNTERS:
                summed: dict[str, float] = {}
                for path in [out / "stat.csv", *sorted(out.glob("stat.*.csv"))]:
                    for name, value in perfcount.read_stat(path).items():
                        summed[name] = summed.get(name, 0.0) + value
                life.counters.update(summed)
            else:
                life.threads = [
                    t
                    for path in [out / "trace.txt", *sorted(out.glob("trace.*.txt"))]
                    for t in perfcount.read_trace(path)
                ]
        except perfcount.PerfError as exc:
            raise CellFailed(str(exc)) from None

    def pair(self, lens: str) -> tuple[Life, Life]:
        """(shorter, longer): valgrind's side by side, perf's the longer first and the shorter
        held up as long (see the module's docstring)."""
        few, many = self.settings["counter_requests" if lens == COUNTERS else "requests"]
        if lens == INSTRUCTIONS:
            return self._side_by_side(lens, few, many)
        longer = self.life(lens, many, 0.0)
        shorter = self.life(lens, few, longer.seconds)
        return shorter, longer

    def _side_by_side(self, lens: str, few: int, many: int) -> tuple[Life, Life]:
        """Both lives at once: the longer on the profile's server CPUs, the shorter on its
        client CPUs, each stopped once both have served. A life that fails breaks the
        barrier, so the other stops too; its own reason is the one raised."""
        together = threading.Barrier(2)
        ended: dict[int, Life | BaseException] = {}
        cpus = {many: self.profile.server_cpus, few: self.profile.client_cpus}

        def live(requests: int) -> None:
            try:
                ended[requests] = self.life(lens, requests, 0.0, cpus=cpus[requests], together=together)
            except BaseException as exc:  # handed to the caller's thread below
                together.abort()
                ended[requests] = exc

        threads = [threading.Thread(target=live, args=(requests,)) for requests in (many, few)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        failures = [ended[n] for n in (many, few) if isinstance(ended[n], BaseException)]
        failures.sort(key=lambda exc: str(exc) == OTHER_LIFE_FAILED)  # the life that failed first
        if failures:
            raise failures[0]
        return ended[few], ended[many]


def counted_instructions(config: dict, lives: Lives) -> Instructions:
    """The valgrind pair's figure; a pair whose lives' collectors differ by more than
    ``work_lens.collector_tolerance`` of the figure, unlike any earlier pair, is counted
    again (``pair_attempts`` pairs at most; the most balanced one is the figure, and
    ``pairs`` says how many were counted). A server with ``work_pairs`` gets that many
    pairs at least, and the median one is its figure (``pair_figures``: every pair's)."""
    settings = config["work_lens"]
    wanted = lives.spec.work_pairs
    counted = []
    for attempt in range(1, settings["pair_attempts"] + wanted):
        lives.pair_suffix = "" if attempt == 1 else f"-pair{attempt}"
        counted.append(workfigures.instructions(config, *lives.pair(INSTRUCTIONS)))
        if len(counted) >= wanted and workfigures.settled(counted, settings["collector_tolerance"]):
            break
    lives.pair_suffix = ""
    best = workfigures.figure_pair(counted, settings["collector_tolerance"], wanted)
    best.pairs, best.pair = len(counted), counted.index(best) + 1
    best.pair_figures = [c.per_request for c in counted]
    return best


@dataclass
class Counted:
    """What the lens found as it went; the record is assembled from it once, at the end."""

    workers: int | None = None
    realtime_priority: int | None = None
    instructions: Instructions | None = None
    syscalls: Syscalls | None = None
    raw: dict[str, list[str]] = field(default_factory=dict)
    client: WorkClient | None = None
    server_version: str | None = None
    interpreter: str | None = None


def measure(found: Counted, config: dict, target: Target, env: dict, log_path: Path, raw_dir: Path, kept: Path):
    """Both lenses' figures into ``found`` (or CellSkipped / CellFailed); each life's raw
    outputs go to ``kept``, named in ``found.raw``."""
    missing = workenv.missing_programs(env)
    if missing:
        raise CellSkipped(f"the work lens needs {', '.join(missing)}, not installed")
    preload = env.get("LD_PRELOAD")
    if preload and not Path(preload).is_file():
        # Without it the figure would move with each life's random hash seed.
        raise CellSkipped(f"the work lens needs {preload} for this server, not built (scripts/install builds it)")
    if apps.needs_script(apps.workloads(config, target.profile)[target.workload]):
        raise CellSkipped(f"the work lens's clients send a GET of one path; {target.workload} needs more")
    lives = Lives(config, target, env, log_path, raw_dir, kept)
    refused = servertree.realtime_refused(lives.priority)
    if refused:
        raise CellSkipped(refused)
    found.workers, found.realtime_priority = lives.profile.workers, lives.priority
    try:
        # perf's lives first: the first of them verifies the server and picks the client.
        counted, named = lives.pair(COUNTERS), lives.pair(NAMES)
        found.instructions = counted_instructions(config, lives)
        found.syscalls = workfigures.syscalls(counted, named)
    finally:
        found.raw = lives.kept_files
        found.client = WorkClient(**asdict(lives.client)) if lives.client else None
    if lives.found_server is not None:
        found.server_version, found.interpreter = lives.found_server.version, lives.found_server.interpreter


def kept_dir(json_path: Path) -> Path:
    """Where a record's raw outputs are kept: ``<server>.raw`` beside ``<server>.json``."""
    return json_path.with_suffix(".raw")


@interruptible()
def run_work(config: dict, profile_name: str, server: str, workload: str, json_path, log_path) -> dict:
    """Measure one server's work per request and write its record (returned as written), its
    raw outputs in ``kept_dir(json_path)``."""
    spec = server_entry(config, server)
    json_path, log_path = Path(json_path), Path(log_path)
    kept = kept_dir(json_path)
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    planted = workenv.planted(config, spec)
    env = workenv.fixed_env(server, {**planted, **workenv.preloaded(config, spec)})
    started, started_at = time.monotonic(), round(time.time(), 4)
    raw_dir = Path(tempfile.mkdtemp(prefix="serverbench-work-"))
    raw_dir.chmod(0o711)
    found, ending = Counted(), Ending()
    try:
        with ladder(ending, log_path=log_path):
            measure(found, config, Target(profile_name, server, workload), env, log_path, raw_dir, kept)
    finally:
        shutil.rmtree(raw_dir, ignore_errors=True)
    # A reason, never a figure: a lens that finished before another failed is not the
    # server's figure either (its lives stay in ``raw`` for a reader).
    ok = ending.status is Status.OK
    record = WorkRecord(
        WORK_SCHEMA,
        profile_name,
        server,
        workload,
        spec.language,
        status=ending.status,
        reason=ending.reason,
        requests=list(config["work_lens"]["requests"]),
        instructions=found.instructions if ok else None,
        syscalls=found.syscalls if ok else None,
        tools=dataclasses.replace(
            workenv.tools(config, server, env),
            server=found.server_version,
            interpreter=found.interpreter,
            realtime_priority=found.realtime_priority,
        ),
        client=found.client,
        planted_iterations=int(planted["SERVERBENCH_EXTRA_ITERATIONS"]) if planted else None,
        workers=found.workers,
        raw=found.raw,
        seconds=round(time.monotonic() - started, 2),
        started_at=started_at,
        ended_at=round(time.time(), 4),
    )
    files.write_json(json_path, asdict(record))
    return asdict(record)
