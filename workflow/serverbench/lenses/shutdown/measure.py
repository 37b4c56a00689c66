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
  judged against the graceful signal alone;
- at ``handover_delay_s``, its first stop (graceful, else fast) behind the nginx front
  (``fronted``: its deployment SERVER+nginx, the app server signalled) and its replacements on
  one host (``replace``: a second instance on the same port through SO_REUSEPORT, or as a
  second upstream of the front, retried and not: replacing.py); a server with no such way is
  a stop not measured, saying why, once.

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
from serverbench.lenses.shutdown import replacing
from serverbench.lenses.shutdown.record import SHUTDOWN_SCHEMA, ShutdownResult, Stop
from serverbench.lenses.shutdown.settings import ShutdownSettings
from serverbench.lenses.shutdown.stopping import Before, Stopped, stop_under_load
from serverbench.lenses.shutdown.words import NO_FRONT, NO_REUSE_PORT, NOT_DECLARED, Handover, How, Placement
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


# Each way of `replace`: the stops it makes (placement, handover).
REPLACEMENTS = {
    "reuse_port": ((Placement.BARE, Handover.REUSE_PORT),),
    "front": ((Placement.FRONTED, Handover.UPSTREAM_RETRY), (Placement.FRONTED, Handover.UPSTREAM_NO_RETRY)),
}


def planned_handovers(plan: ShutdownSettings) -> list[tuple[Placement, Handover]]:
    """Each (placement, handover) of one round besides the bare stops alone: behind the front
    alone (``fronted``), then each way of ``replace``."""
    found = [(Placement.FRONTED, Handover.NONE)] if plan.fronted else []
    return found + [way for name in plan.replace for way in REPLACEMENTS[name]]


def unable(config: dict, server: str, placement: Placement, handover: Handover) -> str | None:
    """Why the server cannot be stopped so (None: it can)."""
    if placement is Placement.FRONTED and replacing.deployment_of(config, server) is None:
        return NO_FRONT
    if handover is Handover.REUSE_PORT and not server_entry(config, server).stop.reuse_port:
        return NO_REUSE_PORT
    return None


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
    first = How.GRACEFUL if declared.graceful is not None else How.FAST
    stops = []
    for round_number in range(1, plan.rounds + 1):
        plain = [
            (how, delay, Placement.BARE, Handover.NONE)
            for how, delay in planned_stops(plan, declared.graceful is not None, bool(declared.control))
        ]
        ways = [(first, float(plan.handover_delay_s), *way) for way in planned_handovers(plan)]
        for how, delay, placement, handover in plain + ways:
            why = unable(config, server, placement, handover)
            if why is not None:  # said once, in the first round
                if round_number == 1:
                    stops.append(
                        Stop(
                            round_number, str(how), None, delay, Status.NOT_MEASURED, why, str(placement), str(handover)
                        )
                    )
                continue
            which = (how, delay, round_number, placement, handover)
            stops.append(one_stop(config, profile, server, workload, which, log_path, before_signal))
            if stops[-1].status == Status.SKIPPED:
                return stops
    return stops


def one_stop(
    config: dict, profile: Profile, server: str, workload: str, which: tuple, log_path: Path, before: Before | None
) -> Stop:
    """Start the server, load and stop it once (``which``: how, delay, round, placement and
    handover); always end it, and the second instance of a replacement."""
    how, delay, round_number, placement, handover = which
    with log_path.open("a") as log:
        log.write(
            f"serverbench: round {round_number}, {how} stop, {delay:g} s still routed, {placement}, "
            f"handed over: {handover}\n"
        )
    found: list[Stop] = []
    name = replacing.deployment_of(config, server) if placement is Placement.FRONTED else server
    session = ServerSession(
        config, Target(profile.name, name, workload), profile, log_path, failures=(OSError, servers.ServerError)
    )
    second = None
    with session:
        launch = session.prepare()
        if handover is Handover.REUSE_PORT:
            replacing.reuse_port_command(launch, server_entry(config, server).stop.reuse_port)
        elif handover in replacing.UPSTREAMS:
            replacing.add_second_upstream(launch, handover)
        launch = session.start()
        second = replacing.Second(launch, handover) if handover is not Handover.NONE else None
        stopped = Stopped(server_entry(config, server).stop, placement, handover, second)
        try:
            found.append(
                stop_under_load(launch, profile.settings(PROFILE_KEY), how, delay, round_number, before, stopped)
            )
        finally:
            if second is not None:
                second.stop()
    ending = session.ending
    if found and ending.ok:
        return found[0]
    return Stop(round_number, str(how), None, delay, ending.status, ending.reason, str(placement), str(handover))
