"""Workers that restart, one job per (profile, server) of a profile with ``recycle``: the
server started as its cells start it (same argv, isolation, network), at its own recycling
and at each of the profile's settings (the catalogue's ``recycle.limit`` and ``jitter`` argvs
added to its command, or to its backend's behind a front), and served a closed loop of
``concurrency`` connections for ``load_s`` with each kind of client, kept alive or a
connection per request. Meanwhile its process tree is sampled every ``sample_every_s``:
each process's id and USS, so a restart is a worker id first seen, never a guess from the
client's side, and the memory each answer keeps is the slope of the USS over the answers.
What the client saw is ``cell.reloads``' closed loop: every request's outcome and time.

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
from serverbench.cell.session import ServerSession
from serverbench.cell.underload import workload_request
from serverbench.cell.wire import request
from serverbench.host.procfs import pss_uss
from serverbench.lenses.recycle import figures
from serverbench.lenses.recycle.record import RECYCLE_SCHEMA, Client, RecycleResult, Run, Setting
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.recycling import limit_in_force, recycling_argv, with_argv
from serverbench.plan.shapes import Target
from serverbench.record.vocabulary import Status


@interruptible()
def run_recycle(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """Every run of one server in a profile, written as one frozen record (returned as written)."""
    profile = effective_profile(config, profile_name)
    plan = profile.recycle
    spec = server_entry(config, server)
    workload = plan.get("workload") or profile.workloads[0]
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    started, started_at = time.monotonic(), round(time.time(), 4)
    runs = runs_of(config, profile, server, workload, log_path)
    measured = [run for run in runs if run.declared]
    status, reason = Status.OK, None
    if measured and measured[-1].status == Status.SKIPPED:
        status, reason = Status.SKIPPED, measured[-1].reason
    elif measured and all(run.status == Status.FAILED for run in measured):
        status, reason = Status.FAILED, measured[0].reason
    result = RecycleResult(
        schema=RECYCLE_SCHEMA, profile=profile_name, server=server, language=spec.language, workload=workload,
        leaks_bytes=apps.workloads(config, profile_name)[workload].get("leaks_bytes"),
        recycle=config["catalogue"][server].get("recycle"), status=status, reason=reason, runs=tuple(runs),
        seconds=round(time.monotonic() - started, 2), started_at=started_at, ended_at=round(time.time(), 4),
    )  # fmt: skip
    files.write_json(json_path, result.to_dict())
    return result.to_dict()


def runs_of(config, profile, server, workload, log_path) -> list[Run]:
    """Each setting with each client; a run the server could not be started for ends them (the
    others would be skipped alike)."""
    runs = []
    for setting in settings(profile.recycle):
        for client in profile.recycle["clients"]:
            runs.append(one_run(config, profile, server, workload, setting, Client(client), log_path))
            if runs[-1].declared and runs[-1].status == Status.SKIPPED:
                return runs
    return runs


def settings(plan: dict) -> list[Setting]:
    """The server's own recycling first, then the profile's settings."""
    return [
        Setting(),
        *(
            Setting(s.get("max_requests"), s.get("jitter") or 0, s.get("min_lifetime_s"), s.get("rss_mb"))
            for s in plan["settings"]
        ),
    ]


def one_run(config, profile, server, workload, setting: Setting, client: Client, log_path: Path) -> Run:
    """Start the server at ``setting``, verify it, load it with ``client`` while sampling it; always stop it."""
    spec = server_entry(config, server)
    argv, cannot = recycling_argv(
        spec.recycle, setting.max_requests, setting.jitter, setting.min_lifetime_s, setting.rss_mb
    )
    limit = limit_in_force(spec.recycle, setting.max_requests)
    made = {"setting": setting, "client": client, "limit": limit, "argv": argv,
            "counts": spec.recycle.counts.value if spec.recycle else None}  # fmt: skip
    if cannot:
        return Run(**made, declared=False, status=Status.SKIPPED, reason=cannot)
    with log_path.open("a") as log:
        log.write(f"serverbench: {setting.label}, {client.value} clients, {' '.join(argv) or 'as the catalogue'}\n")
    found: dict = {}
    recycling = with_argv(config, server, argv, setting.max_requests)
    target = Target(profile.name, server, workload)
    session = ServerSession(recycling, target, profile, log_path, failures=(OSError, servers.ServerError))
    with session:
        launch = session.start()
        session.verify()
        found = under_load(launch, profile.recycle, client, limit)
    ending = session.ending
    return Run(**made, **found, status=ending.status, reason=ending.reason)


def under_load(launch: Launch, plan: dict, client: Client, limit: int | None) -> dict:
    """The closed loop for ``load_s`` while the process tree is sampled; the run's figures."""
    leaks_bytes = apps.workloads(launch.config, launch.target.profile)[launch.target.workload].get("leaks_bytes")
    sent, status = workload_request(launch)
    if client == Client.FRESH:
        path = apps.workloads(launch.config, launch.target.profile)[launch.target.workload]["path"]
        host = f"{launch.host}:{launch.port}"
        sent = request("GET", path, headers=[("Host", host), ("Connection", "close")])
    loop = reloads.ClosedLoop(launch.host, launch.port, sent, status, plan["concurrency"], fresh=client == Client.FRESH)
    samples: list[list] = []
    done = threading.Event()
    origin = time.monotonic()
    sampler = threading.Thread(target=_sample, args=(launch, loop, origin, plan["sample_every_s"], samples, done))
    sampler.start()
    loop.start()
    try:
        time.sleep(plan["load_s"])
    finally:
        outcomes = loop.stop()
        done.set()
        sampler.join()
    return run_figures(samples, outcomes, origin, plan, leaks_bytes, limit, launch.profile.workers)


def run_figures(samples: list[list], outcomes: list, origin: float, plan: dict, leaks_bytes, limit, workers) -> dict:
    """The record's figures of one run from its samples and outcomes (``figures``)."""
    whole = reloads.window(outcomes, origin, origin + plan["load_s"])
    restarted = figures.restarts(samples, outcomes, origin, plan["window_s"])
    moments = [restart.at_s for restart in restarted]
    return {
        "load_s": plan["load_s"],
        "answered": whole.answered,
        "failed_by_kind": whole.failed,
        "dropped_reused": whole.dropped_reused,
        "longest_gap_s": round(whole.longest_gap_s, 4) if whole.longest_gap_s is not None else None,
        "workers_at_start": len(samples[0][3]) if samples else None,
        "restarts": restarted,
        "most_away": figures.most_away(samples),
        **figures.around(outcomes, origin, moments, plan["window_s"]),
        "seconds": figures.per_second(outcomes, origin, plan["load_s"]),
        **figures.leak(samples, moments[0] if moments else None),
        **figures.peaks(samples, leaks_bytes, limit, workers, plan["load_s"]),
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
