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
import os
import signal
import socket
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from serverbench import files
from serverbench.cell import reloads, servers
from serverbench.cell.errors import CellFailed, interruptible
from serverbench.cell.launch import Launch, placeholders_used
from serverbench.cell.session import ServerSession
from serverbench.cell.wire import request
from serverbench.host.procfs import pss_uss
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Target

OPERATIONS_SCHEMA = "serverbench.operations/2"  # /2: scales, and a scaling server's step of load
FIRST_ANSWER_POLL_S = 0.01
NOT_DECLARED = "the catalogue declares no graceful reload for this server"
LOADED_AT = 0.75  # of the control window: when memory under load is read
ALIVE_WITHIN_S = 1.0  # after the last reload: a correct answer this late says the server came back
PID_PATH = "/pid"  # the apps answer the id of the process that answered
BALANCE_S = 0.5  # of the closed loop asking /pid: thousands of answers to share out, even from Starman


@dataclass
class Life:
    """One start of the server: its worker count, cold start and idle memory."""

    round: int
    workers: int
    cold_start_s: float | None = None
    listening_s: float | None = None  # the port accepted a connection (the cells' readiness)
    processes: list[dict] = field(default_factory=list)  # pid, name, pss_bytes, uss_bytes
    pss_bytes: int | None = None
    uss_bytes: int | None = None
    status: str = "ok"
    reason: str | None = None
    balance: dict | None = None
    reload: dict | None = None
    step: dict | None = None  # a scaling server's processes and PSS over an idle-load-idle step


@dataclass
class OperationsResult:
    schema: str
    profile: str
    server: str
    language: str
    workload: str
    status: str = "ok"  # ok | skipped | failed (the server could not be started at all)
    reason: str | None = None
    reload_trigger: dict | None = None  # the catalogue's `reload`, None: the server has none
    workers_vary: bool = False  # the command takes {workers}: a worker's memory can be told
    scales: bool = False  # the command or templates take {workers_min}: it scales its workers
    lives: list[dict] = field(default_factory=list)
    seconds: float | None = None
    started_at: float | None = None
    ended_at: float | None = None


@interruptible()
def run_operations(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """Every life of one server in a profile, written as one result (returned as written)."""
    profile = effective_profile(config, profile_name)
    spec = server_entry(config, server)
    plan = profile.operations
    workload = profile.workloads[0]
    result = OperationsResult(OPERATIONS_SCHEMA, profile_name, server, spec.language, workload)
    result.reload_trigger = spec.reload
    result.workers_vary = "workers" in placeholders_used(spec)
    result.scales = "workers_min" in placeholders_used(spec)
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    started = time.monotonic()
    result.started_at = round(time.time(), 4)
    counts = sorted(set(plan["workers"])) if result.workers_vary else [profile.workers]
    # The life that is loaded and reloaded: the profile's own worker count, else the most.
    loaded_at = profile.workers if profile.workers in counts else counts[-1]
    # The other worker counts only give a worker's cost, a slope over every life: a few rounds
    # of them suffice, where the checks compared between servers need five lives or more.
    slope_rounds = plan.get("slope_rounds") or plan["rounds"]
    for round_number in range(1, plan["rounds"] + 1):
        for workers in counts if round_number <= slope_rounds else [loaded_at]:
            loaded = workers == loaded_at
            asked = {"reload": loaded, "step": loaded and result.scales and bool(plan.get("step"))}
            life = one_life(config, profile, server, workload, workers, round_number, asked, log_path)
            result.lives.append(asdict(life))
            if life.status == "skipped":
                result.status, result.reason = "skipped", life.reason
                break
        if result.status == "skipped":
            break
    if result.lives and all(life["status"] == "failed" for life in result.lives):
        result.status, result.reason = "failed", result.lives[0]["reason"]
    result.seconds = round(time.monotonic() - started, 2)
    result.ended_at = round(time.time(), 4)
    files.write_json(json_path, asdict(result))
    return asdict(result)


def one_life(config, profile, server, workload, workers, round_number, asked: dict, log_path) -> Life:
    """Start the server at ``workers``, time its first answer, read its memory idle, where
    ``asked['step']`` follow its workers over a step of load, where ``asked['reload']`` reload
    it under load; always stop it."""
    life = Life(round_number, workers)
    lived = dataclasses.replace(profile, workers=workers)
    with log_path.open("a") as log:
        log.write(f"serverbench: life {round_number} at {workers} workers\n")
    session = ServerSession(
        config, Target(profile.name, server, workload), lived, log_path, failures=(OSError, servers.ServerError)
    )
    with session:
        launch = session.start(ready=False)  # first_answer times readiness itself
        life.cold_start_s, life.listening_s = first_answer(launch)
        time.sleep(profile.operations["idle_s"])
        life.processes, life.pss_bytes, life.uss_bytes = memory(launch)
        if asked["step"]:
            life.step = step_load(launch, profile.operations)
        if asked["reload"]:
            life.balance = balance(launch, profile.operations)
            life.reload = reload_under_load(launch, profile.operations)
    if not session.ending.ok:
        life.status, life.reason = session.ending.status, session.ending.reason
    return life


def _request(launch: Launch) -> tuple[bytes, int]:
    """The workload's request (a GET of its path) and the status a correct answer has."""
    workload = apps.workloads(launch.config, launch.target.profile)[launch.target.workload]
    host = f"{launch.host}:{launch.port}"
    return request("GET", workload["path"], headers=[("Host", host)]), launch.expected_answer["status"]


def first_answer(launch: Launch) -> tuple[float, float]:
    """Seconds from the server's exec to its first correct answer, and to its port accepting
    connections (``wait_ready``, as the cells judge readiness)."""
    launch.wait_ready()
    listening = launch.found.server.ready_s
    sent, status = _request(launch)
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


def memory(launch: Launch) -> tuple[list[dict], int | None, int | None]:
    """PSS and USS of every live process of the server (and their totals, None where one
    could not be read)."""
    found = []
    for process in launch.server.tree():
        read = pss_uss(process.pid)
        try:
            name = process.name()
        except psutil.NoSuchProcess:  # gone between the listing and here
            continue
        found.append(
            {
                "pid": process.pid,
                "name": name,
                "pss_bytes": read[0] if read else None,
                "uss_bytes": read[1] if read else None,
            }
        )
    complete = found and all(p["pss_bytes"] is not None for p in found)
    pss = sum(p["pss_bytes"] for p in found) if complete else None
    uss = sum(p["uss_bytes"] for p in found) if complete else None
    return found, pss, uss


def trigger(launch: Launch, spec: dict) -> None:
    """One reload, as the catalogue declares it: a signal to the server's main process, a file
    it watches touched (uWSGI's chain reload), or a request to its control API (NGINX Unit's
    restart of its application processes)."""
    if "signal" in spec:
        launch.server.front.proc.send_signal(getattr(signal, f"SIG{spec['signal']}"))
        return
    if "touch" in spec:
        watched = Path(servers.render_argv([spec["touch"]], launch.values)[0])
        watched.touch()
        os.utime(watched)  # an existing file: its time set to now, which the server compares
        return
    control = launch.spec.control
    socket_path = servers.render_argv([control["socket"]], launch.values)[0]
    status, answer = servers.control_request(socket_path, spec["control"]["method"], spec["control"]["path"])
    if status != 200:
        raise servers.ServerError(f"reload refused by the control API ({status}): {answer.strip()[:300]}")


def balance(launch: Launch, plan: dict) -> dict:
    """How evenly the server's workers share the answers: the closed loop asks the app which
    process answered (``/pid``) for ``BALANCE_S``; each worker's share, and Jain's index over
    the profile's worker count (a worker that answered nothing counts as 0)."""
    host = f"{launch.host}:{launch.port}"
    sent = request("GET", PID_PATH, headers=[("Host", host)])
    client = reloads.ClosedLoop(launch.host, launch.port, sent, 200, plan["concurrency"], keep_bodies=True)
    client.start()
    time.sleep(BALANCE_S)
    outcomes = client.stop()
    by_pid = Counter(o.body.decode(errors="replace").strip() for o in outcomes if o.kind == reloads.OK and o.body)
    workers = launch.profile.workers
    if not by_pid or not all(pid.isdigit() for pid in by_pid):
        return {"status": "not measured", "reason": f"the app does not answer {PID_PATH} with its process id"}
    counts = sorted(by_pid.values(), reverse=True) + [0] * max(0, workers - len(by_pid))
    total = sum(counts)
    return {
        "status": "ok",
        "reason": None,
        "connections": plan["concurrency"],
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


def step_load(launch: Launch, plan: dict) -> dict:
    """A scaling server's processes and PSS over a step of load: idle ``idle_s``, the closed
    loop (``plan['concurrency']`` kept-alive connections) for ``load_s``, idle ``after_s``,
    sampled every ``every_s``; the idle count, the peak, how long the rise to it and the fall
    back took (None: it did not fall back within ``after_s``)."""
    step = plan["step"]
    sent, status = _request(launch)
    origin = time.monotonic()
    load_at, idle_at = step["idle_s"], step["idle_s"] + step["load_s"]
    samples, client, loading = [], None, False
    try:
        while (now := time.monotonic() - origin) < idle_at + step["after_s"]:
            if client is None and now >= load_at:
                client = reloads.ClosedLoop(launch.host, launch.port, sent, status, plan["concurrency"]).start()
                loading = True
            if loading and now >= idle_at:
                client.stop()
                loading = False
            samples.append(_sample(launch, origin))
            time.sleep(step["every_s"])
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
        "status": "ok",
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


def reload_under_load(launch: Launch, plan: dict) -> dict:
    """Closed-loop load with ``plan['reloads']`` reloads ``plan['reload_every']`` s apart (none
    where the server declares no reload): the window before the first (the control), memory
    under that load, each reload's window, and whether the server was still there and
    answering at the end."""
    spec = launch.spec.reload
    sent, status = _request(launch)
    # A server without a declared reload still gets the load: its memory under it, and the control.
    every, count = plan["reload_every"], plan["reloads"] if spec else 0
    client = reloads.ClosedLoop(launch.host, launch.port, sent, status, plan["concurrency"]).start()
    origin = time.monotonic()
    moments, problem, loaded = [], None, None
    try:
        # Memory under load: late in the control window, the server warm and busy.
        _sleep_until(origin + every * LOADED_AT)
        processes, pss, uss = memory(launch)
        loaded = {"processes": len(processes), "pss_bytes": pss, "uss_bytes": uss}
        for k in range(count):
            _sleep_until(origin + every * (k + 1))
            moments.append(time.monotonic())
            trigger(launch, spec)
        _sleep_until(origin + every * (count + 1))
    except (OSError, servers.ServerError) as exc:
        problem = f"reload {len(moments)} could not be triggered: {exc}"
    finally:
        outcomes = client.stop()
    end = time.monotonic()
    bounds = [*moments, end]
    found = {
        "status": "ok",
        "reason": problem,
        "connections": plan["concurrency"],
        "loaded_memory": loaded,
        "control": reloads.window(outcomes, origin, moments[0] if moments else end).as_dict(origin),
        "reloads": [reloads.window(outcomes, a, b).as_dict(origin) for a, b in zip(bounds, bounds[1:], strict=False)],
    }
    exit_code = launch.server.exit_code()
    answered_late = any(o.kind == reloads.OK and o.t >= end - ALIVE_WITHIN_S for o in outcomes)
    found["alive_after"] = exit_code is None and answered_late
    if not spec:
        found["status"], found["reason"] = "not declared", NOT_DECLARED
    elif problem or not found["alive_after"]:
        gone = f"the server exited with code {exit_code}" if exit_code is not None else "no correct answer at the end"
        found["status"], found["reason"] = "broken", problem or f"after {len(moments)} reloads {gone}"
    return found


def _sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))
