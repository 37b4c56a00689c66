"""Does the server need a front? One job per (profile, server) of a profile with ``front``.

The server runs bare and as each of its deployments behind a front that the profile lists
(``gunicorn+nginx``: config ``fronts``, the catalogue's ``behind``), every deployment a
``ServerSession`` of its own, all alive side by side on the server's CPUs (an idle one
takes none), each verified first. Then, ``rounds`` times, every condition on every
deployment, the deployments' order alternating round by round so that a slow spell of the
machine falls on both: the normal clients (the profile's ``tool``: closed loop, keep-alive,
``clients`` connections) alone, and beside slow clients of each kind and count
(``cell.slowclients``; clients that connect for every request are oha with keep-alive off),
in place (every connection open and sending: they say so) ``settle_s`` before the normal
clients start, and held until they end. The slow clients
run on the client's CPUs; their own CPU time is recorded (a slow client must not be a busy
one), and so is every timeout the server, the front and the clients apply.

A deployment that cannot start, or dies, is a recorded failure; the job goes on with the
others, and no process outlives it.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from pathlib import Path

from serverbench import files
from serverbench.cell import loadgen, parsers, servers
from serverbench.cell.errors import CellFailed, interruptible
from serverbench.cell.launch import Launch, render
from serverbench.cell.rawlog import RawLog
from serverbench.cell.session import Ending, ServerSession
from serverbench.cell.underload import tree_pss
from serverbench.host.runenv import version_of
from serverbench.lenses.front import slowclients
from serverbench.lenses.front.record import (
    FRONT_SCHEMA,
    Condition,
    Deployment,
    FrontRecord,
    Relative,
    Run,
    SlowAccount,
    SlowKind,
)
from serverbench.lenses.front.settings import FrontSettings
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Profile, Target
from serverbench.record.vocabulary import Status

FAILURES = (OSError, servers.ServerError, loadgen.ToolMissing)
PATHS = {SlowKind.BODY: "/echo", SlowKind.READERS: "/large"}  # the hello apps' (apps/*/hello.*)
HOLD_AFTER_S = 0.5  # the slow clients hold on this long after the normal clients' run should end
NEW_CONNECTIONS_TOOL = "oha-fresh-closed"
READY_TIMEOUT_S = 10  # beyond the hold: the slow clients' process starting on a stalled machine
READY_POLL_S = 0.01


def slow_count(relative: Relative, holds: int) -> int:
    """Slow clients for ``relative``, against the requests the server holds at once."""
    return {Relative.FEWER: max(1, holds - 1), Relative.AS_MANY: holds, Relative.MORE: 2 * holds}[relative]


def conditions(spec: FrontSettings, holds: int) -> list[Condition]:
    """Fast clients only, then every slow kind at each of its counts (``as many`` by default)."""
    found = [Condition(SlowKind.NONE)]
    for kind in map(SlowKind, spec.kinds):
        for relative in map(Relative, spec.counts.get(kind, [Relative.AS_MANY])):
            found.append(Condition(kind, relative, slow_count(relative, holds)))
    return found


def deployments_of(config: dict, profile: Profile, server: str) -> list[str]:
    """The server bare, then each deployment of it behind a front that the profile lists."""
    fronted = [
        name
        for name in profile.servers
        if (entry := server_entry(config, name)).fronted is not None and entry.fronted.server == server
    ]
    return [server, *fronted]


class Live:
    """A deployment started for the job: its session (whose ending says how it ended), its
    launch once it answers."""

    def __init__(self, name: str, session: ServerSession):
        self.name, self.session = name, session
        self.launch: Launch | None = None

    @property
    def ending(self) -> Ending:
        return self.session.ending


class Fronting:
    """One server's job: its deployments, the conditions, the runs (the module's docstring)."""

    def __init__(self, config: dict, profile: Profile, server: str, json_path, log_path):
        self.config, self.profile, self.server = config, profile, server
        self.spec: FrontSettings = profile.settings("front")
        self.workload = profile.workloads[0]
        self.log_path = Path(log_path)
        self.raw = RawLog(str(Path(json_path).with_suffix(".raw.txt")))
        self.holds = profile.workers * profile.threads
        self.runs: list[Run] = []

    def start(self, stack: contextlib.ExitStack, name: str) -> Live:
        target = Target(self.profile.name, name, self.workload)
        session = ServerSession(self.config, target, self.profile, self.log_path, ladder=False, failures=FAILURES)
        live = Live(name, stack.enter_context(session))
        with self.log_path.open("a") as log:
            log.write(f"serverbench: {name}\n")
        with session.step():
            launch = session.start()
            session.verify()
            live.launch = launch
        return live

    def measure_all(self, lives: list[Live]) -> None:
        plan = conditions(self.spec, self.holds)
        for round_number in range(1, self.spec.rounds + 1):
            order = lives if round_number % 2 else lives[::-1]
            for condition in plan:
                for live in order:
                    if live.launch is None:
                        continue
                    with live.session.step():
                        self.runs.append(self.measure(live, condition, round_number))
                    if not live.ending.ok:
                        live.launch = None  # failed: measured no further (stopped with the others)

    def measure(self, live: Live, condition: Condition, round_number: int) -> Run:
        launch = live.launch
        spec = self.spec
        duration = spec.duration_s
        hold = spec.settle_s + duration + HOLD_AFTER_S
        path = apps.workloads(self.config, self.profile.name)[self.workload]["path"]
        label = f"{live.name} round {round_number}, {condition.label()}"
        ready = self.log_path.with_name(f".{self.server}.slow-ready")
        ready.unlink(missing_ok=True)
        slow_thread, slow_result = self._slow(launch, condition, hold, path, ready)
        try:
            if slow_thread and condition.kind is not SlowKind.NEW_CONNECTIONS:
                wait_ready(ready, slow_thread, hold + READY_TIMEOUT_S)
            time.sleep(spec.settle_s if slow_thread else 0)
            argv = self._normal_argv(launch, path, duration)
            deadline = duration + self.profile.timeout + 30
            ran = loadgen.run(argv, self.profile.client_cpus, deadline, cpu_quota=self.profile.client_cpu_quota)
        finally:
            if slow_thread:
                slow_thread.join()
            ready.unlink(missing_ok=True)
        header = self.raw.add(f"{label}: normal clients", ran.output)
        pss = tree_pss(launch) if condition.kind is SlowKind.NONE else None
        try:
            parsed = parsers.parse("oha", ran.output)
        except parsers.ParseError:
            launch.check_alive(condition.label())
            raise CellFailed(f"the normal clients' output could not be read ({label})", ran.output) from None
        launch.check_alive(condition.label())
        slow = self._account(label, condition, slow_result) if slow_thread else None
        return normal_run(live.name, round_number, condition, parsed, duration, pss, slow, header)

    def _normal_argv(
        self, launch: Launch, path: str, duration: float, tool: str | None = None, clients: int | None = None
    ):
        url = f"http://{launch.host}:{launch.port}{path}"
        values = loadgen.tool_values(self.profile, clients or self.spec.clients, url, duration)
        return loadgen.build_argv(self.config["load_tools"][tool or self.spec.tool], values)

    def _slow(self, launch: Launch, condition: Condition, hold: float, path: str, ready: Path):
        """The slow clients started in a thread of their own (None where there are none). The
        slow clients' module run as a file: it needs only the standard library, and starts in a
        tenth of the time importing this package would take."""
        if condition.kind is SlowKind.NONE:
            return None, {}
        if condition.kind is SlowKind.NEW_CONNECTIONS:
            argv = self._normal_argv(launch, path, hold, NEW_CONNECTIONS_TOOL, condition.count)
        else:
            argv = [
                sys.executable,
                slowclients.__file__,
                "--kind",
                str(condition.kind),
                "--count",
                str(condition.count),
                "--host",
                launch.host,
                "--port",
                str(launch.port),
                "--path",
                PATHS.get(condition.kind, path),
                "--hold",
                f"{hold:g}",
                "--pace",
                f"{self.spec.pace_s:g}",
                "--body-bytes",
                str(self.spec.body_bytes),
                "--ready",
                str(ready),
            ]
        result: dict = {}

        def run():
            result["run"] = loadgen.run(argv, self.profile.client_cpus, hold + 30)

        thread = threading.Thread(target=run, name="slow clients", daemon=True)
        thread.start()
        return thread, result

    def _account(self, label: str, condition: Condition, result: dict) -> SlowAccount:
        ran: loadgen.ToolRun | None = result.get("run")
        if ran is None:
            raise CellFailed(f"the slow clients did not run ({label})")
        header = self.raw.add(f"{label}: {condition.kind}", ran.output)
        busy = round(ran.cpu_s / ran.wall_s, 4) if ran.wall_s else None
        if condition.kind is SlowKind.NEW_CONNECTIONS:
            parsed = parsers.parse("oha", ran.output)
            failed = parsed["errors_total"] or 0
            return SlowAccount({"answered": parsed["requests"] or 0, "failed": failed}, None, None, busy, header)
        try:
            found = json.loads(ran.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise CellFailed(f"the slow clients' account could not be read ({label})", ran.output) from None
        return SlowAccount(found["outcomes"], found["held_s_median"], found["first_closed_s"], busy, header)


def wait_ready(ready: Path, slow: threading.Thread, timeout: float) -> None:
    """Until the slow clients say every connection is open and sending (``ready`` exists), they
    have ended, or ``timeout``: the settling starts from there, not from their process's start."""
    deadline = time.monotonic() + timeout
    while not ready.exists() and slow.is_alive() and time.monotonic() < deadline:
        time.sleep(READY_POLL_S)


def normal_run(deployment, round_number, condition, parsed, duration, pss, slow, header) -> Run:
    """A run of the normal clients from oha's parsed output."""
    cut_off = sum((parsed["errors_detail"].get("cut_off_at_deadline") or {}).values())
    p99 = parsed["latency_ms"]["p99"]
    rps = parsed["requests_per_s"]
    return Run(
        deployment=deployment,
        round=round_number,
        condition=condition,
        requests=parsed["requests"],
        rps=None if rps is None else round(rps, 1),
        p99_ms=None if p99 is None else round(p99, 3),
        failed=parsed["errors_total"] or 0,
        timed_out=parsed["errors"]["timeout"] or 0,
        cut_off=cut_off,
        duration_s=duration,
        pss_bytes=pss,
        slow=slow,
        raw_header=header,
    )


def describe(config: dict, live: Live) -> Deployment:
    """A deployment as the record keeps it: its front, protocol, versions and timeouts."""
    entry = server_entry(config, live.name)
    fronted = entry.fronted
    found = live.session.launch.found.server if live.session.launch else None
    front_version = None
    if fronted is not None and fronted.version:
        front_version = version_of(render(config, fronted.version), live.session.env)
    return Deployment(
        name=live.name,
        front=fronted.front if fronted else None,
        protocol=fronted.protocol if fronted else None,
        upstream_keepalive=fronted.upstream_keepalive if fronted else None,
        status=live.ending.status,
        reason=live.ending.reason,
        server_version=found.version if found else None,
        front_version=front_version,
        timeouts=dict(entry.timeouts),
        front_timeouts=dict(fronted.timeouts) if fronted else {},
        front_workers=fronted.workers if fronted else None,
    )


def overall(deployments: list[Deployment]) -> tuple[Status, str | None]:
    """The job's status: ok where the bare server was measured, else its ending."""
    bare = deployments[0]
    return (Status.OK, None) if bare.status is Status.OK else (bare.status, bare.reason)


@interruptible()
def run_front(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """One server bare and behind its fronts, under fast and slow clients; the record written."""
    started = time.monotonic()
    profile = effective_profile(config, profile_name)
    fronting = Fronting(config, profile, server, json_path, log_path)
    fronting.log_path.parent.mkdir(parents=True, exist_ok=True)
    fronting.log_path.write_bytes(b"")
    Path(fronting.raw.path).write_bytes(b"")
    with contextlib.ExitStack() as stack:
        lives = [fronting.start(stack, name) for name in deployments_of(config, profile, server)]
        fronting.measure_all(lives)
        deployments = [describe(config, live) for live in lives]
    status, reason = overall(deployments)
    record = FrontRecord(
        schema=FRONT_SCHEMA,
        profile=profile_name,
        server=server,
        language=server_entry(config, server).language,
        app=apps.app_name(config, profile_name),
        workload=fronting.workload,
        workers=profile.workers,
        threads=profile.threads,
        holds_at_once=fronting.holds,
        cpus=list(profile.server_cpus),
        clients=fronting.spec.clients,
        client_timeout_s=float(profile.timeout),
        pace_s=fronting.spec.pace_s,
        deployments=tuple(deployments),
        runs=tuple(fronting.runs),
        status=status,
        reason=reason,
        raw=Path(fronting.raw.path).name,
        seconds=round(time.monotonic() - started, 2),
    )
    files.write_json(json_path, record.to_dict())
    return record.to_dict()
