"""A server in operation, one job per (profile, server) of a profile with
``operations``: the server started as its cells start it (same argv, isolation,
network), several times, and asked what running it costs:

- **cold start**: from the server's exec to its first correct answer (a fresh
  connection each try, every 10 ms), in each life;
- **memory**: PSS and USS of every process once it has answered and idled
  (``idle_s``), at each worker count of ``workers`` (where the server's command
  takes ``{workers}``): a worker's cost is the slope of the total over them;
- **balance**: in the life at the profile's own worker count, the same client
  asks the app which process answered (``/pid``) for a second: each worker's
  share of the answers, and Jain's index over the profile's workers;
- **reload under load**: in the life at the profile's own worker count, the
  closed-loop client of ``cell.reloads`` runs while the catalogue's ``reload``
  (a signal to the server's main process, or a request to its control API) is
  triggered ``reloads`` times, ``reload_every`` seconds apart: each reload's
  failed requests by kind, connections dropped while idle, and the longest time
  without a correct answer, beside the same figures before the first reload.

Rounds repeat the lives (``rounds``; those at the other worker counts only in the first
``slope_rounds``), so each figure has a spread. A server
without a declared reload says so; one that dies or stops answering on reload is
a finding of the reload check, not a failed job; a server that cannot start is a
recorded failure. No process outlives the job.
"""

from __future__ import annotations

import dataclasses
import socket
import time
from collections import Counter
from pathlib import Path

from serverbench import files
from serverbench.cell import reloads, servers
from serverbench.cell.errors import CellFailed, interruptible
from serverbench.cell.launch import Launch, placeholders_used
from serverbench.cell.session import ServerSession
from serverbench.cell.underload import memory, reload_under_load, workload_request
from serverbench.cell.wire import request
from serverbench.lenses.operations.record import OPERATIONS_SCHEMA, Life, OperationsResult
from serverbench.lenses.operations.settings import OperationsSettings
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Target
from serverbench.record.vocabulary import Status

FIRST_ANSWER_POLL_S = 0.01
PID_PATH = "/pid"  # the apps answer the id of the process that answered
BALANCE_S = 0.5  # of the closed loop asking /pid: thousands of answers to share out, even from Starman


@interruptible()
def run_operations(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """Every life of one server in a profile, written as one frozen record (returned as written)."""
    profile = effective_profile(config, profile_name)
    spec = server_entry(config, server)
    workload = profile.workloads[0]
    workers_vary = "workers" in placeholders_used(spec)
    scales = "workers_min" in placeholders_used(spec)
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    started, started_at = time.monotonic(), round(time.time(), 4)
    lives = lives_of(config, profile, server, workload, workers_vary, scales, log_path)
    status, reason = Status.OK, None
    if lives and lives[-1].status == Status.SKIPPED:
        status, reason = Status.SKIPPED, lives[-1].reason
    elif lives and all(life.status == Status.FAILED for life in lives):
        status, reason = Status.FAILED, lives[0].reason
    result = OperationsResult(
        schema=OPERATIONS_SCHEMA,
        profile=profile_name,
        server=server,
        language=spec.language,
        workload=workload,
        status=status,
        reason=reason,
        reload_trigger=spec.reload,
        workers_vary=workers_vary,
        scales=scales,
        lives=tuple(lives),
        seconds=round(time.monotonic() - started, 2),
        started_at=started_at,
        ended_at=round(time.time(), 4),
    )
    files.write_json(json_path, result.to_dict())
    return result.to_dict()


def lives_of(config, profile, server, workload, workers_vary: bool, scales: bool, log_path) -> list[Life]:
    """The rounds of lives: each worker count in the first ``slope_rounds``, then the loaded one
    alone; a skipped life ends them (the others would be skipped alike)."""
    settings: OperationsSettings = profile.settings("operations")
    counts = sorted(set(settings.workers)) if workers_vary else [profile.workers]
    # The life that is loaded and reloaded: the profile's own worker count, else the most.
    loaded_at = profile.workers if profile.workers in counts else counts[-1]
    # The other worker counts only give a worker's cost, a slope over every life: a few rounds
    # of them suffice, where the checks compared between servers need five lives or more.
    slope_rounds = settings.slope_rounds or settings.rounds
    lives = []
    for round_number in range(1, settings.rounds + 1):
        for workers in counts if round_number <= slope_rounds else [loaded_at]:
            loaded = workers == loaded_at
            asked = {"reload": loaded, "step": loaded and scales and settings.step is not None}
            lives.append(one_life(config, profile, server, workload, workers, round_number, asked, log_path))
            if lives[-1].status == Status.SKIPPED:
                return lives
    return lives


def one_life(config, profile, server, workload, workers, round_number, asked: dict, log_path) -> Life:
    """Start the server at ``workers``, time its first answer, read its memory idle, where
    ``asked['step']`` follow its workers over a step of load, where ``asked['reload']`` reload
    it under load; always stop it."""
    found: dict = {}
    settings: OperationsSettings = profile.settings("operations")
    lived = dataclasses.replace(profile, workers=workers)
    with log_path.open("a") as log:
        log.write(f"serverbench: life {round_number} at {workers} workers\n")
    session = ServerSession(
        config, Target(profile.name, server, workload), lived, log_path, failures=(OSError, servers.ServerError)
    )
    with session:
        launch = session.start(ready=False)  # first_answer times readiness itself
        found["cold_start_s"], found["listening_s"] = first_answer(launch)
        time.sleep(settings.idle_s)
        found["processes"], found["pss_bytes"], found["uss_bytes"] = memory(launch)
        if asked["step"]:
            found["step"] = step_load(launch, settings)
        if asked["reload"]:
            found["balance"] = balance(launch, settings)
            found["reload"] = reload_under_load(launch, settings.reload_plan)
    ending = session.ending
    return Life(round_number, workers, **found, status=ending.status, reason=ending.reason)


def first_answer(launch: Launch) -> tuple[float, float]:
    """Seconds from the server's exec to its first correct answer, and to its port accepting
    connections (``wait_ready``, as the cells judge readiness)."""
    launch.wait_ready()
    listening = launch.found.server.ready_s
    sent, status = workload_request(launch)
    deadline = time.monotonic() + launch.profile.ready_timeout
    while time.monotonic() < deadline:
        launch.check_alive("its first answer")
        try:
            with socket.create_connection((launch.host, launch.port), timeout=1) as sock:
                sock.sendall(sent)
                got, _, _ = reloads.read_answer(sock, bytearray())
            if got == status:
                return round(time.monotonic() - launch.server.front.started_at, 4), listening
        except (OSError, reloads.ClosedEarly):
            pass
        time.sleep(FIRST_ANSWER_POLL_S)
    raise CellFailed(f"no correct answer within {launch.profile.ready_timeout:g} s of the start")


def balance(launch: Launch, settings: OperationsSettings) -> dict:
    """How evenly the server's workers share the answers: the closed loop asks the app which
    process answered (``/pid``) for ``BALANCE_S``; each worker's share, and Jain's index over
    the profile's worker count (a worker that answered nothing counts as 0)."""
    host = f"{launch.host}:{launch.port}"
    sent = request("GET", PID_PATH, headers=[("Host", host)])
    client = reloads.ClosedLoop(launch.host, launch.port, sent, 200, settings.concurrency, keep_bodies=True)
    client.start()
    time.sleep(BALANCE_S)
    outcomes = client.stop()
    by_pid = Counter(o.body.decode(errors="replace").strip() for o in outcomes if o.kind == reloads.OK and o.body)
    workers = launch.profile.workers
    if not by_pid or not all(pid.isdigit() for pid in by_pid):
        return {"status": Status.NOT_MEASURED, "reason": f"the app does not answer {PID_PATH} with its process id"}
    counts = sorted(by_pid.values(), reverse=True) + [0] * max(0, workers - len(by_pid))
    total = sum(counts)
    return {
        "status": Status.OK,
        "reason": None,
        "connections": settings.concurrency,
        "workers": workers,
        "answers_by_pid": dict(by_pid),
        "busiest_share": round(counts[0] / total, 4),
        "jain": round(total**2 / (len(counts) * sum(c * c for c in counts)), 4),
    }


def _sample(launch: Launch, origin: float) -> list:
    """[seconds since ``origin``, the server's processes, their PSS summed (None: unread, as
    when a worker forked or exited between the listing and the read, twice running)]."""
    found, pss, _ = memory(launch)
    if pss is None:
        found, pss, _ = memory(launch)
    return [round(time.monotonic() - origin, 3), len(found), pss]


def step_load(launch: Launch, settings: OperationsSettings) -> dict:
    """A scaling server's processes and PSS over a step of load: idle ``idle_s``, the closed
    loop (``concurrency`` kept-alive connections) for ``load_s``, idle ``after_s``,
    sampled every ``every_s``; the idle count, the peak, how long the rise to it and the fall
    back took (None: it did not fall back within ``after_s``)."""
    step = settings.step
    sent, status = workload_request(launch)
    origin = time.monotonic()
    load_at, idle_at = step.idle_s, step.idle_s + step.load_s
    samples, client, loading = [], None, False
    try:
        while (now := time.monotonic() - origin) < idle_at + step.after_s:
            if client is None and now >= load_at:
                client = reloads.ClosedLoop(launch.host, launch.port, sent, status, settings.concurrency).start()
                loading = True
            if loading and now >= idle_at:
                client.stop()
                loading = False
            samples.append(_sample(launch, origin))
            time.sleep(step.every_s)
    finally:
        if loading:
            client.stop()
    return step_figures(samples, load_at, idle_at)


def step_figures(samples: list, load_at: float, idle_at: float) -> dict:
    """The step's figures from its samples ([t, processes, pss])."""
    before = [n for t, n, _ in samples if t < load_at] or [samples[0][1]]
    during = [(t, n) for t, n, _ in samples if load_at <= t < idle_at]
    after = [(t, n) for t, n, _ in samples if t >= idle_at]
    idle = sorted(before)[len(before) // 2]
    peak = max((n for _, n in during), default=idle)
    rise = next((t - load_at for t, n in during if n == peak), None)
    fall = next((t - idle_at for t, n in after if n <= idle), None)
    pss = [p for _, _, p in samples if p is not None]
    return {
        "status": Status.OK,
        "load_at_s": load_at,
        "idle_at_s": idle_at,
        "processes_idle": idle,
        "processes_peak": peak,
        "processes_after": after[-1][1] if after else None,
        "rise_s": round(rise, 3) if rise is not None else None,
        "fall_s": round(fall, 3) if fall is not None else None,
        "pss_peak_bytes": max(pss) if pss else None,
        "samples": samples,
    }
