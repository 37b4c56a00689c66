"""Workers that restart, one job per (profile, server) of a profile with ``recycle``: the
server started as its cells start it (same argv, isolation, network), at its own recycling
and at each of the profile's settings (the catalogue's ``recycle.limit`` and ``jitter`` argvs
added to its command, or to its backend's behind a front), and served a closed loop of
``concurrency`` connections for ``load_s`` with each kind of client, kept alive or a
connection per request. Meanwhile its process tree is sampled every ``sample_every_s``:
each process's id and USS, so a restart is a worker id first seen, never a guess from the
client's side, and the memory each answer keeps is the slope of the USS over the answers.
What the client saw is ``cell.reloads``' closed loop: every request's outcome and time. Behind a
front, each of the profile's ``upstream`` ways the front reaches the app server: with its
connections kept, and with one per request (with the first kind of client only: the front's
connections are what the app server sees).

With ``capacity``, each server is then started ``lives`` times at its own recycling and at the
capacity's setting, alternating, and its capacity at the p99 objective searched by open-loop
rates (``cell.objective``) while its process tree is watched for workers that leave.

A setting the server cannot take (it declares no recycling, or no jitter) is a run that says
so; a server that cannot start is a recorded failure; no process outlives the job.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from serverbench import files
from serverbench.cell import reloads, servers
from serverbench.cell.errors import interruptible
from serverbench.cell.launch import Launch
from serverbench.cell.objective import ObjectiveProbe, connections_for
from serverbench.cell.rawlog import RawLog
from serverbench.cell.session import ServerSession
from serverbench.cell.underload import workload_request
from serverbench.cell.wire import request
from serverbench.host.procfs import pss_uss
from serverbench.lenses.recycle import figures
from serverbench.lenses.recycle.record import (
    RECYCLE_SCHEMA,
    CapacityLife,
    Client,
    RecycleResult,
    Run,
    Setting,
    Upstream,
)
from serverbench.lenses.recycle.settings import Capacity, RecycleSettings
from serverbench.plan import apps
from serverbench.plan.catalogue import ServerEntry, server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.fronts import without_upstream_keepalive
from serverbench.plan.objective import ObjectiveSearch
from serverbench.plan.recycling import limit_in_force, recycling_argv, with_argv
from serverbench.plan.shapes import Target
from serverbench.record.vocabulary import Status


@interruptible()
def run_recycle(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """Every run of one server in a profile, written as one frozen record (returned as written)."""
    profile = effective_profile(config, profile_name)
    asked: RecycleSettings = profile.settings("recycle")
    entry = server_entry(config, server)
    workload = asked.workload or profile.workloads[0]
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    started, started_at = time.monotonic(), round(time.time(), 4)
    runs = runs_of(config, profile, entry, workload, log_path)
    raw = RawLog(str(Path(json_path).with_suffix(".raw.txt")))
    lives = capacity_lives(config, profile, entry, workload, log_path, raw)
    measured = [run for run in runs if run.declared]
    status, reason = Status.OK, None
    if measured and measured[-1].status == Status.SKIPPED:
        status, reason = Status.SKIPPED, measured[-1].reason
    elif measured and all(run.status == Status.FAILED for run in measured):
        status, reason = Status.FAILED, measured[0].reason
    result = RecycleResult(
        schema=RECYCLE_SCHEMA,
        profile=profile_name,
        server=server,
        language=entry.language,
        workload=workload,
        leaks_bytes=apps.workloads(config, profile_name)[workload].get("leaks_bytes"),
        recycle=config["catalogue"][server].get("recycle"),
        status=status,
        reason=reason,
        runs=tuple(runs),
        capacity=tuple(lives),
        seconds=round(time.monotonic() - started, 2),
        started_at=started_at,
        ended_at=round(time.time(), 4),
    )
    files.write_json(json_path, result.to_dict())
    return result.to_dict()


def runs_of(config, profile, entry: ServerEntry, workload, log_path) -> list[Run]:
    """Each setting with each client (and, behind a front, each upstream); a run the server could
    not be started for ends them (the others would be skipped alike)."""
    runs = []
    asked: RecycleSettings = profile.settings("recycle")
    for setting in settings(asked):
        for client, upstream in ways(entry, asked):
            runs.append(one_run(config, profile, entry, workload, setting, client, log_path, upstream))
            if runs[-1].declared and runs[-1].status == Status.SKIPPED:
                return runs
    return runs


def ways(entry: ServerEntry, asked: RecycleSettings) -> list[tuple[Client, Upstream | None]]:
    """The (client, upstream) pairs a server is loaded with: every client; behind a front, every
    client over kept upstream connections and the first client over one per request."""
    clients = [Client(client) for client in asked.clients]
    if not entry.fronted:
        return [(client, None) for client in clients]
    found = []
    for upstream in map(Upstream, asked.upstream):
        found += [(client, upstream) for client in (clients if upstream == Upstream.KEEPALIVE else clients[:1])]
    return found


def settings(asked: RecycleSettings) -> list[Setting]:
    """The server's own recycling first, then the profile's settings."""
    return [Setting(), *asked.settings]


def one_run(
    config,
    profile,
    entry: ServerEntry,
    workload,
    setting: Setting,
    client: Client,
    log_path: Path,
    upstream: Upstream | None = None,
) -> Run:
    """Start the server at ``setting``, verify it, load it with ``client`` while sampling it; always stop it."""
    server = entry.name
    argv, cannot = recycling_argv(
        entry.recycle, setting.max_requests, setting.jitter, setting.min_lifetime_s, setting.rss_mb
    )
    limit = limit_in_force(entry.recycle, setting.max_requests)
    made = {
        "setting": setting,
        "client": client,
        "upstream": upstream,
        "limit": limit,
        "argv": argv,
        "counts": entry.recycle.counts.value if entry.recycle else None,
    }
    if cannot:
        return Run(**made, declared=False, status=Status.SKIPPED, reason=cannot)
    with log_path.open("a") as log:
        through = f", upstream {upstream.value}" if upstream else ""
        log.write(
            f"serverbench: {setting.label}, {client.value} clients{through}, {' '.join(argv) or 'as the catalogue'}\n"
        )
    found: dict = {}
    recycling = with_argv(config, server, argv, setting.max_requests)
    if upstream == Upstream.CLOSE:
        recycling = without_upstream_keepalive(recycling, server)
    target = Target(profile.name, server, workload)
    session = ServerSession(recycling, target, profile, log_path, failures=(OSError, servers.ServerError))
    with session:
        launch = session.start()
        session.verify()
        found = under_load(launch, profile.settings("recycle"), client, limit)
    ending = session.ending
    return Run(**made, **found, status=ending.status, reason=ending.reason)


def under_load(launch: Launch, asked: RecycleSettings, client: Client, limit: int | None) -> dict:
    """The closed loop for ``load_s`` while the process tree is sampled; the run's figures."""
    leaks_bytes = apps.workloads(launch.config, launch.target.profile)[launch.target.workload].get("leaks_bytes")
    sent, status = workload_request(launch)
    if client == Client.FRESH:
        path = apps.workloads(launch.config, launch.target.profile)[launch.target.workload]["path"]
        host = f"{launch.host}:{launch.port}"
        sent = request("GET", path, headers=[("Host", host), ("Connection", "close")])
    loop = reloads.ClosedLoop(launch.host, launch.port, sent, status, asked.concurrency, fresh=client == Client.FRESH)
    samples: list[list] = []
    done = threading.Event()
    origin = time.monotonic()
    sampler = threading.Thread(target=_sample, args=(launch, loop, origin, asked.sample_every_s, samples, done))
    sampler.start()
    loop.start()
    try:
        time.sleep(asked.load_s)
    finally:
        outcomes = loop.stop()
        done.set()
        sampler.join()
    return run_figures(samples, outcomes, origin, asked, leaks_bytes, limit, launch.profile.workers)


def run_figures(
    samples: list[list], outcomes: list, origin: float, asked: RecycleSettings, leaks_bytes, limit, workers
) -> dict:
    """The record's figures of one run from its samples and outcomes (``figures``)."""
    load_s, window_s = asked.load_s, asked.window_s
    whole = reloads.window(outcomes, origin, origin + load_s)
    restarted = figures.restarts(samples, outcomes, origin, window_s)
    moments = [restart.at_s for restart in restarted]
    return {
        "load_s": load_s,
        "answered": whole.answered,
        "failed_by_kind": whole.failed,
        "dropped_reused": whole.dropped_reused,
        "longest_gap_s": round(whole.longest_gap_s, 4) if whole.longest_gap_s is not None else None,
        "workers_at_start": len(samples[0][3]) if samples else None,
        "restarts": restarted,
        "most_away": figures.most_away(samples),
        **figures.around(outcomes, origin, moments, window_s),
        "seconds": figures.per_second(outcomes, origin, load_s),
        **figures.leak(samples, moments[0] if moments else None),
        **figures.peaks(samples, leaks_bytes, limit, workers, load_s),
        "samples": samples,
    }


def _sample(launch: Launch, loop: reloads.ClosedLoop, origin: float, every: float, samples: list, done) -> None:
    """[s since ``origin``, correct answers so far, USS summed (None: a process unread), {pid: USS}]
    every ``every`` seconds until ``done``."""
    while not done.is_set():
        by_pid = {}
        for process in launch.server.tree():
            read = pss_uss(process.pid)
            by_pid[process.pid] = read[1] if read else None
        answered = loop.answered
        known = [uss for uss in by_pid.values() if uss is not None]
        total = sum(known) if by_pid and len(known) == len(by_pid) else None
        samples.append([round(time.monotonic() - origin, 3), answered, total, by_pid])
        done.wait(every)


def capacity_lives(config, profile, entry: ServerEntry, workload, log_path: Path, raw: RawLog) -> list[CapacityLife]:
    """The server's capacity at the objective at its own recycling and at the first of the
    capacity's settings it can take, ``lives`` times each, alternating (none where the profile
    asks no ``capacity``)."""
    asked: Capacity | None = profile.settings("recycle").capacity
    if asked is None:
        return []
    pair = (Setting(), capacity_setting(entry.recycle, asked.settings))
    return [
        capacity_life(config, profile, entry, workload, setting, life, log_path, raw)
        for life in range(1, asked.lives + 1)
        for setting in pair
    ]


def capacity_setting(recycle, asked: tuple[Setting, ...]) -> Setting:
    """The first of ``asked`` the server can take (else the last, whose run says why not)."""
    for setting in asked:
        if recycling_argv(recycle, setting.max_requests, setting.jitter, setting.min_lifetime_s)[1] is None:
            return setting
    return asked[-1]


def capacity_life(
    config, profile, entry: ServerEntry, workload, setting: Setting, life: int, log_path: Path, raw
) -> CapacityLife:
    """One start of the server at ``setting``: its capacity at the objective, the workers that left meanwhile."""
    search: ObjectiveSearch = profile.settings("recycle").capacity.search
    server = entry.name
    argv, cannot = recycling_argv(entry.recycle, setting.max_requests, setting.jitter, setting.min_lifetime_s)
    made = {
        "setting": setting,
        "life": life,
        "limit": limit_in_force(entry.recycle, setting.max_requests),
        "counts": entry.recycle.counts.value if entry.recycle else None,
        "argv": argv,
        "objective_p99_ms": search.objective_p99_ms,
    }
    if cannot:
        return CapacityLife(**made, declared=False, status=Status.SKIPPED, reason=cannot)
    connections = connections_for(profile.workers, profile.threads, search.max_connections)
    label = f"{server} at {setting.label}, life {life}"
    with log_path.open("a") as log:
        log.write(f"serverbench: capacity at {setting.label} (life {life}), {connections} connections\n")
    found, left = None, None
    target = Target(profile.name, server, workload)
    session = ServerSession(
        with_argv(config, server, argv, setting.max_requests),
        target,
        profile,
        log_path,
        failures=(OSError, servers.ServerError),
    )
    with session:
        launch = session.start()
        session.verify()
        path = apps.workloads(config, profile.name)[workload]["path"]
        probe = ObjectiveProbe(config, profile, launch, path, raw, label, search)
        with LeftWatch(launch) as watched:
            found = probe.capacity(connections)
        left = watched.left
    ending = session.ending
    if found is None:
        return CapacityLife(**made, status=ending.status, reason=ending.reason, connections=connections)
    return CapacityLife(
        **made,
        status=ending.status,
        reason=ending.reason,
        connections=connections,
        peak_rps=found.peak_rps,
        met_rps=found.met,
        missed_rps=found.missed,
        held_by=found.limit,
        memory_bytes=found.memory_at_met(),
        workers_left=left,
        steps=tuple(found.steps),
        raw=Path(raw.path).name,
    )


class LeftWatch:
    """The server's process ids, read every ``EVERY_S`` while it is entered: ``left`` counts those
    seen that a later reading no longer found (a worker that exited)."""

    EVERY_S = 0.05

    def __init__(self, launch: Launch):
        self.launch, self.seen, self.left = launch, set(), 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        while not self._done.is_set():
            now = {process.pid for process in self.launch.server.tree()}
            self.left += len(self.seen - now)
            self.seen = now
            self._done.wait(self.EVERY_S)

    def __enter__(self) -> LeftWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
