"""One stop under load: a started server loaded by closed-loop clients (kept-alive connections
and a connection per request) and, where asked, open-loop ones at a share of the closed loops'
answered rate, stopped as its catalogue declares (a graceful or a fast stop, or
a drain: its control requests, then its graceful signal ``delay_s`` later), the clients sending
for ``delay_s`` more (a balancer still routing to it), then every request
counted by what it met and the stop timed from its signal: to the listener gone (sock_diag),
to the last correct answer, to the server's processes gone; its exit code; and, where asked, a
request longer than the graceful timeout, sent before the signal: answered or cut.

Where it stands behind the front (``Stopped.placement``) the app server alone is signalled and
waited for, the front left running; where a second instance takes over (``Stopped.second``:
replacing.py) the second is started first and the listener, still there, is not waited for."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from serverbench.cell import servers
from serverbench.cell.launch import Launch
from serverbench.cell.underload import workload_request
from serverbench.cell.wire import request
from serverbench.lenses.shutdown.client import Clients, OpenLoop, Sent, answered_rate, cut, exchange
from serverbench.lenses.shutdown.record import Request, Stop
from serverbench.lenses.shutdown.replacing import Second
from serverbench.lenses.shutdown.settings import ShutdownSettings
from serverbench.lenses.shutdown.watch import ServerSockets, Watcher
from serverbench.lenses.shutdown.words import Client, Handover, How, Met, Placement
from serverbench.plan.catalogue import Stop as StopSpec

EXIT_POLL_S = 0.02
LISTENER_SEEN_WITHIN_S = 1.0  # of the processes gone: the watcher's next snapshot
# Further clients started just before the signal, given the watcher (stop_under_load).
Before = Callable[[Watcher], list[Clients]]
ACCEPTED_WITHIN_S = 10.0  # the long request's connection accepted (a started server's first accept)


def stop_accepting(launch: Launch, spec: StopSpec) -> None:
    """The server's own "stop accepting", a drain's first step: its declared control requests in
    order (Unit: its listener, then its application, removed)."""
    socket_path = servers.render_argv([launch.spec.control["socket"]], launch.values)[0]
    for step in spec.control:
        path = servers.render_argv([step["path"]], launch.values)[0]
        status, answer = servers.control_request(socket_path, step["method"], path)
        if status != 200:
            raise servers.ServerError(f"{step['method']} {path} refused ({status}): {answer.strip()[:200]}")


@dataclass(frozen=True)
class Stopped:
    """What a stop stops: the server's declared stop (``spec``; behind a front, its app
    server's), where it stands and what takes over (``second``, started by the stop)."""

    spec: StopSpec
    placement: Placement = Placement.BARE
    handover: Handover = Handover.NONE
    second: Second | None = None

    @property
    def alone(self) -> bool:
        """Stopped bare with nothing taking over: its listener is the clients' and goes with it."""
        return self.placement is Placement.BARE and self.handover is Handover.NONE


def stopped_process(launch: Launch) -> servers.ServerProcess:
    """The process a stop signals: the app server (a front's backend, its first member)."""
    return launch.server.members[0]


def send_signal(process: servers.ServerProcess, spec: StopSpec, how: How) -> str:
    """The stop's signal to the server's main process (a drain's is the graceful one); its name."""
    name = spec.fast if how is How.FAST else spec.graceful
    process.proc.send_signal(getattr(signal, f"SIG{name}"))
    return name


def family_of(process: servers.ServerProcess) -> list[psutil.Process]:
    """The process and its descendants at the signal: what must end for it to be gone where its
    isolation holds others too (the front, a second instance)."""
    try:
        root = psutil.Process(process.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class LongRequest:
    """A request on its own connection whose answer takes longer than the graceful timeout (the
    app's ``path``), sent before the signal: what it met and when it ended."""

    def __init__(self, launch: Launch, path: str, timeout: float, watcher: Watcher):
        self.launch, self.timeout, self.watcher = launch, timeout, watcher
        self.sent = request("GET", path, headers=[("Host", f"{launch.host}:{launch.port}")])
        self.status = launch.expected_answer["status"]
        self.port: int | None = None
        self.met: Met | None = None
        self.ended: float | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> LongRequest:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            with socket.create_connection((self.launch.host, self.launch.port), timeout=self.timeout) as sock:
                self.port = sock.getsockname()[1]
                met, _ = exchange(sock, self.sent, self.status)
                self.met = cut(sock, False, self.watcher) if met is None else met
        except OSError:
            self.met = Met.REFUSED
        self.ended = time.monotonic()

    def result(self, origin: float) -> dict:
        self._thread.join(self.timeout + 1)
        ended = None if self.ended is None else round(self.ended - origin, 4)
        return {"met": str(self.met) if self.met else None, "ended_s": ended}


def _counted(sent: list[Sent], origin: float) -> tuple[dict, tuple[Request, ...]]:
    """The answers counted by client before and after the signal; every other request kept."""
    answered: dict[str, Counter] = {}
    failures = []
    for one in sent:
        if one.met is Met.ANSWERED:
            answered.setdefault(str(one.client), Counter())["after" if one.ended >= origin else "before"] += 1
        else:
            times = round(one.sent - origin, 4), round(one.ended - origin, 4)
            failures.append(Request(*times, str(one.met), str(one.client), one.connection, one.reused))
    return {client: dict(counts) for client, counts in answered.items()}, tuple(failures)


def wait_gone(process: servers.ServerProcess, limit: float, family: list | None = None) -> float | None:
    """Until every process of the server has ended (monotonic s), or None after ``limit``:
    every one of its isolation's, or where others share it, of its ``family``."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.exit_code() is not None:
            if not (process.tree() if family is None else [one for one in family if _alive(one)]):
                return time.monotonic()
        time.sleep(EXIT_POLL_S)
    return None


def _loads(launch: Launch, plan: ShutdownSettings, watcher: Watcher) -> list[Clients]:
    """The closed loops of the plan, started: kept-alive connections and a connection per request."""
    sent, status = workload_request(launch)
    return [
        Clients(launch.host, launch.port, sent, status, connections, kind, watcher, plan.timeout_s).start()
        for connections, kind in ((plan.keepalive, Client.KEEPALIVE), (plan.fresh, Client.FRESH))
        if connections
    ]


def _open_loop(launch: Launch, plan: ShutdownSettings, loads: list[Clients], since: float, watcher: Watcher):
    """The open loop started at its share of the closed loops' answered rate since ``since``
    (None where they were answered at none: nothing to pace it by)."""
    rate = plan.open_loop.share * answered_rate(loads, since)
    if rate <= 0:
        return None
    sent, status = workload_request(launch)
    return OpenLoop(
        launch.host, launch.port, sent, status, plan.open_loop.senders, Client.OPEN, watcher, plan.timeout_s, rate=rate
    ).start()


def _signalled(launch: Launch, how: How, loads: list[Clients], delay_s: float, watcher: Watcher, spec) -> tuple:
    """The stop begun, the clients told to stop sending ``delay_s`` after it: its moment (the
    signal's; a drain's, its first control request's, the signal sent once ``delay_s`` has
    passed), the signal's name, the seconds from that moment to the signal and, where the stop
    could not be sent, why."""
    origin = time.monotonic()
    watcher.since = origin
    for load in loads:
        load.until = origin + delay_s
    try:
        if how is How.DRAIN:
            stop_accepting(launch, spec)
            time.sleep(max(0.0, origin + delay_s - time.monotonic()))
        signalled = time.monotonic()
        return origin, send_signal(stopped_process(launch), spec, how), round(signalled - origin, 4), None
    except (OSError, servers.ServerError) as exc:
        return origin, None, None, f"the {how} stop could not be sent: {exc}"


def _unpaced(plan: ShutdownSettings, open_loop: OpenLoop | None) -> str | None:
    if plan.open_loop is not None and open_loop is None:
        return "no open loop: the closed loops were answered at no rate to pace it by"
    return None


def stop_under_load(
    launch: Launch,
    plan: ShutdownSettings,
    how: How,
    delay_s: float,
    round_number: int,
    before_signal: Before | None = None,
    stopped: Stopped | None = None,
) -> Stop:
    """Load, stop, count (the module's docstring); the server is left to the session to end,
    a second instance to the caller. ``before_signal``, called with the watcher once the load
    has run, starts further clients whose requests are counted with the load's (a condition a
    test creates: requests queued behind a busy worker). ``stopped``: the server's own stop,
    bare and alone, unless given."""
    stopped = stopped or Stopped(launch.spec.stop)
    watcher = Watcher(ServerSockets(launch.host, launch.port)).start()
    second = stopped.second
    loads, long, gone, open_loop, origin = [], None, None, None, time.monotonic()
    try:
        if second is not None and second.before_load:
            second.start(watcher)
        loaded_at = time.monotonic()
        loads = _loads(launch, plan, watcher)
        if plan.long_request is not None:
            long = LongRequest(launch, plan.long_request.path, plan.long_request.timeout_s, watcher)
        open_loop = _run_load(launch, plan, loads, loaded_at, watcher, long)
        if before_signal is not None:
            loads += before_signal(watcher)
        if second is not None and not second.before_load:
            second.start(watcher)
        family = None if stopped.alone else family_of(stopped_process(launch))
        origin, name, signal_s, problem = _signalled(launch, how, loads, delay_s, watcher, stopped.spec)
        if problem is None:
            gone = wait_gone(stopped_process(launch), plan.exit_wait_s, family)
        if gone is not None and stopped.alone:  # the listener went at the latest with the processes
            watcher.wait_for(lambda snapshot: not snapshot.listening, LISTENER_SEEN_WITHIN_S)
    finally:
        done = [one for load in loads for one in load.join()]
        watcher.stop()
    return _stop_record(
        launch,
        plan,
        (how, delay_s, round_number),
        stopped,
        done,
        watcher,
        origin,
        name,
        signal_s,
        problem,
        gone,
        open_loop,
        long,
    )


def _run_load(launch: Launch, plan: ShutdownSettings, loads: list, loaded_at: float, watcher: Watcher, long):
    """The load before the signal (``loads`` grows by the open loop, where one is asked): with an
    open loop, the closed loops' first half of the load paces it, its second half has both; then
    the long request, where asked, accepted before the signal. Returns the open loop (or None)."""
    open_loop = None
    time.sleep(plan.load_s / 2 if plan.open_loop is not None else plan.load_s)
    if plan.open_loop is not None:
        open_loop = _open_loop(launch, plan, loads, loaded_at, watcher)
        loads += [open_loop] if open_loop is not None else []
        time.sleep(plan.load_s / 2)
    if long is not None:
        long.start()
        watcher.wait_for(lambda snapshot: long.port in snapshot.accepted, ACCEPTED_WITHIN_S)
    return open_loop


def _stop_record(
    launch, plan, which, stopped, done, watcher, origin, name, signal_s, problem, gone, open_loop, long
) -> Stop:
    """One stop's record from every request it counted and the moments the watcher saw."""
    how, delay_s, round_number = which
    answered, failures = _counted(done, origin)
    answers = [one.ended for one in done if one.met is Met.ANSWERED and one.ended >= origin]

    def since(moment: float | None) -> float | None:
        return None if moment is None else round(moment - origin, 4)

    return Stop(
        round_number,
        str(how),
        name,
        delay_s,
        placement=str(stopped.placement),
        handover=str(stopped.handover),
        reason=problem or watcher.error or _unpaced(plan, open_loop),
        signal_s=signal_s,
        listener_closed_s=since(watcher.listener_gone_at),
        last_answer_s=since(max(answers)) if answers else None,
        exited_s=since(gone),
        exit_code=stopped_process(launch).exit_code(),
        open_rate=round(open_loop.rate, 2) if open_loop is not None else None,
        open_lag_s=round(open_loop.lag_s, 4) if open_loop is not None else None,
        killed=gone is None,
        long_request=long.result(origin) if long is not None else None,
        answered=answered,
        failures=failures,
    )
