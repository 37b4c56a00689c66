"""A server stopped under load, one job per (profile, server) of a profile with ``shutdown``:
the server started as its cells start it (same argv, isolation, network), loaded by
closed-loop clients (``keepalive`` kept-alive connections and ``fresh`` ones a connection per
request; ``open_loop``, open-loop ones at a share of their answered rate), then stopped as the
catalogue's ``stop`` declares, ``rounds`` times each way:

- its graceful stop (where it has one; else its fast one) with the clients sending on for
  each delay of ``delays`` (a balancer still routing to it: Kubernetes' preStop case);
- its fast stop at the first delay (``fast``), against which the graceful one is judged;
- where its ``stop`` declares control requests (Unit), its drain at each delay (``drain``):
  those requests first (it stops accepting), the graceful signal once the delay has passed,
  judged against the graceful signal alone.

Each stop is a fresh start (stopping.stop_under_load): every request counted by what it met,
the seconds from the signal to the listener gone, to the last answer and to the processes
gone, the exit code. A server without a declared stop says so; one that cannot start is a
recorded failure. No process outlives the job (the session kills what a stop left running).
"""

from __future__ import annotations

import time
from pathlib import Path

from serverbench import files
from serverbench.cell import servers
from serverbench.cell.errors import interruptible
from serverbench.cell.session import ServerSession
from serverbench.lenses.shutdown.record import SHUTDOWN_SCHEMA, ShutdownResult, Stop
from serverbench.lenses.shutdown.settings import ShutdownSettings
from serverbench.lenses.shutdown.stopping import Before, stop_under_load
from serverbench.lenses.shutdown.words import NOT_DECLARED, How
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Profile, Target
from serverbench.record.vocabulary import Status

PROFILE_KEY = "shutdown"


def planned_stops(plan: ShutdownSettings, has_graceful: bool, has_drain: bool = False) -> list[tuple[How, float]]:
    """Each (how, delay) of one round: the graceful stop (the fast one where the server has no
    graceful stop) at every delay, the fast stop at the first delay where both exist, and the
    drain at every delay where the server declares one."""
    first = How.GRACEFUL if has_graceful else How.FAST
    stops = [(first, float(delay)) for delay in plan.delays]
    if has_graceful and plan.fast:
        stops.append((How.FAST, float(plan.delays[0])))
    if has_graceful and has_drain and plan.drain:
        stops += [(How.DRAIN, float(delay)) for delay in plan.delays]
    return stops


@interruptible()
def run_shutdown(config: dict, profile_name: str, server: str, json_path, log_path, before_signal=None) -> dict:
    """Every stop of one server in a profile, written as one frozen record (returned as written)."""
    profile = effective_profile(config, profile_name)
    plan = profile.settings(PROFILE_KEY)
    spec = server_entry(config, server)
    workload = profile.workloads[0]
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    started, started_at = time.monotonic(), round(time.time(), 4)
    status, reason, stops = Status.OK, None, []
    if spec.stop is None:
        status, reason = Status.NOT_MEASURED, NOT_DECLARED
    else:
        stops = rounds_of(config, profile, server, workload, plan, log_path, before_signal)
        if stops and stops[-1].status == Status.SKIPPED:
            status, reason = Status.SKIPPED, stops[-1].reason
        elif stops and all(stop.status == Status.FAILED for stop in stops):
            status, reason = Status.FAILED, stops[0].reason
    result = ShutdownResult(
        schema=SHUTDOWN_SCHEMA,
        profile=profile_name,
        server=server,
        language=spec.language,
        workload=workload,
        status=status,
        reason=reason,
        stop_spec=config["catalogue"][server].get("stop"),
        stops=tuple(stops),
        seconds=round(time.monotonic() - started, 2),
        started_at=started_at,
        ended_at=round(time.time(), 4),
        settings=plan.to_dict(),
    )
    files.write_json(json_path, result.to_dict())
    return result.to_dict()


def rounds_of(config, profile, server, workload, plan, log_path, before_signal) -> list[Stop]:
    """Every round's stops; a skipped one ends them (the others would be skipped alike)."""
    declared = server_entry(config, server).stop
    stops = []
    for round_number in range(1, plan.rounds + 1):
        for how, delay in planned_stops(plan, declared.graceful is not None, bool(declared.control)):
            which = (how, delay, round_number)
            stops.append(one_stop(config, profile, server, workload, which, log_path, before_signal))
            if stops[-1].status == Status.SKIPPED:
                return stops
    return stops


def one_stop(
    config: dict, profile: Profile, server: str, workload: str, which: tuple, log_path: Path, before: Before | None
) -> Stop:
    """Start the server, load and stop it once (``which``: how, delay, round); always end it."""
    how, delay, round_number = which
    with log_path.open("a") as log:
        log.write(f"serverbench: round {round_number}, {how} stop, {delay:g} s still routed\n")
    found: list[Stop] = []
    session = ServerSession(
        config, Target(profile.name, server, workload), profile, log_path, failures=(OSError, servers.ServerError)
    )
    with session:
        launch = session.start()
        found.append(stop_under_load(launch, profile.settings(PROFILE_KEY), how, delay, round_number, before))
    ending = session.ending
    if found and ending.ok:
        return found[0]
    return Stop(round_number, str(how), None, delay, status=ending.status, reason=ending.reason)
