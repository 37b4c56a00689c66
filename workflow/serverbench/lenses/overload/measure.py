"""One server past its capacity, one job per (profile, server) of a profile with ``overload``.
At each backlog of ``backlogs`` (backlog.py) the server is started as its cells start it, its
capacity at the p99 objective found (cell.objective: open-loop rates, bisected), then offered
open loop each multiple of it for ``hold_s`` by each client (the judged one ``repeats`` times),
and the burst: ``multiple`` of it for ``seconds`` (a second oha on top of the one offering
``after`` of it throughout, which goes on ``after_s`` more and in which recovery is read).
Every request is counted by what it met (client.py), the server's side sampled beside it: its
accept queue (queue.py), its processes' CPU and PSS (the timed cells' sampler, cell.monitor).
Then, with the first capacity found, the hung request (hang.py): the server started afresh at
its own request timeout and at the set one. A server that cannot start, or never meets the
objective, is a recorded condition; no process outlives the job."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import threading
import time
from pathlib import Path

import numpy as np

from serverbench import files
from serverbench.cell import servers
from serverbench.cell.errors import interruptible
from serverbench.cell.launch import Launch
from serverbench.cell.monitor import Monitor
from serverbench.cell.objective import ObjectiveProbe, connections_for
from serverbench.cell.rawlog import RawLog
from serverbench.cell.session import ServerSession
from serverbench.lenses.overload.backlog import own_backlog_config, raised_somaxconn
from serverbench.lenses.overload.client import Offered, connections_for_rate, offer
from serverbench.lenses.overload.hang import hang_runs
from serverbench.lenses.overload.queue import QueueSampler
from serverbench.lenses.overload.record import OVERLOAD_SCHEMA, Condition, OverloadResult, Stretch
from serverbench.lenses.overload.recovery import recovery_s
from serverbench.lenses.overload.settings import OverloadSettings
from serverbench.lenses.overload.words import Backlog, Client, Met, Phase
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Profile, Target
from serverbench.record.vocabulary import Status

PROFILE_KEY = "overload"
NEVER_MET = "no offered rate met the objective: no capacity to go past"


@interruptible()
def run_overload(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """Every backlog's stretches of one server in a profile, written as one frozen record."""
    profile = effective_profile(config, profile_name)
    plan: OverloadSettings = profile.settings(PROFILE_KEY)
    spec = server_entry(config, server)
    workload = profile.workloads[0]
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    raw = RawLog(str(Path(json_path).with_suffix(".raw.txt")))
    started, started_at = time.monotonic(), round(time.time(), 4)
    target = Target(profile.name, server, workload)
    conditions = [one_condition(config, profile, target, Backlog(b), plan, log_path, raw) for b in plan.backlogs]
    capacity = next((c.capacity_rps for c in conditions if c.status == Status.OK and c.capacity_rps), None)
    hangs = hang_runs(config, profile, target, plan, capacity, log_path)
    status, reason = Status.OK, None
    if all(c.status != Status.OK for c in conditions):
        status, reason = conditions[0].status, conditions[0].reason
    result = OverloadResult(
        schema=OVERLOAD_SCHEMA,
        profile=profile_name,
        server=server,
        language=spec.language,
        workload=workload,
        objective_p99_ms=plan.search.objective_p99_ms,
        status=status,
        reason=reason,
        conditions=tuple(conditions),
        seconds=round(time.monotonic() - started, 2),
        started_at=started_at,
        ended_at=round(time.time(), 4),
        settings=plan.to_dict(),
        hangs=hangs,
    )
    files.write_json(json_path, result.to_dict())
    return result.to_dict()


def one_condition(config, profile: Profile, target: Target, backlog: Backlog, plan, log_path, raw) -> Condition:
    """Start the server at one backlog, find its capacity and go past it; always end it."""
    if backlog == Backlog.OWN:
        config, why = own_backlog_config(config, target.server)
        if config is None:
            return Condition(str(backlog), Status.NOT_MEASURED, why)
    with log_path.open("a") as log:
        log.write(f"serverbench: {target.server} at its {backlog} backlog\n")
    found: list[Condition] = []
    with raised_somaxconn(profile.backlog if backlog == Backlog.SET else None) as somaxconn:
        session = ServerSession(config, target, profile, log_path, failures=(OSError, servers.ServerError))
        with session:
            launch = session.start()
            session.verify()
            found.append(past_capacity(config, profile, launch, backlog, plan, log_path, raw, somaxconn))
    ending = session.ending
    if found and ending.ok:
        return found[0]
    return Condition(str(backlog), ending.status, ending.reason)


def past_capacity(config, profile, launch: Launch, backlog: Backlog, plan, log_path, raw, somaxconn) -> Condition:
    """The capacity at the objective, then each multiple by each client, then the burst."""
    path = apps.workloads(config, profile.name)[profile.workloads[0]]["path"]
    # A 503 is no answer within the objective: the rates start from what it served, not shed.
    label = f"{launch.target.server} {backlog}"
    probe = ObjectiveProbe(config, profile, launch, path, raw, label, plan.search, shed_answers=False)
    capacity = probe.capacity(connections_for(profile.workers, profile.threads, plan.search.max_connections)).met
    limits = launch.found.limits
    shape = {
        "backlog": str(backlog),
        "asked_backlog": profile.backlog if backlog == Backlog.SET else None,
        "listen_backlog": limits.listen_backlog if limits else None,
        "somaxconn": somaxconn,
    }
    if not capacity:
        return Condition(**shape, status=Status.FAILED, reason=NEVER_MET)
    url = f"http://{launch.host}:{launch.port}{path}"
    load = Load(config, plan, url, launch.port, log_path, launch.server)
    stretches = []
    for client in map(Client, plan.clients):
        for multiple in plan.offered_multiples():
            stretches += [load.steady(client, multiple, capacity, n) for n in range(plan.times_offered(multiple))]
        if plan.burst is not None:
            stretches.append(load.burst(client, capacity))
    return Condition(**shape, capacity_rps=capacity, stretches=tuple(stretches))


# What the server's side keeps of the timed cells' sampler's summary (cell.monitor), per stretch.
SERVER_SIDE = ("cpu_s", "cpu_percent", "pss_peak_bytes", "pss_mean_bytes", "processes_max", "samples")


class Load:
    """The stretches of one condition: oha at rates, the server's side sampled meanwhile (its
    accept queue; its processes where ``server`` is given: the launch's)."""

    def __init__(self, config, plan: OverloadSettings, url: str, port: int, log_path: Path, server=None):
        self.plan, self.url, self.port, self.log_path, self.server = plan, url, port, log_path, server
        # The lens reads oha's rows and report itself (client.py): the tool named as the core's `oha` is.
        self.oha = shutil.which(str(config["load_tools"]["oha"]["command"][0])) or "oha"
        self.objective_s = plan.search.objective_p99_ms / 1000

    def _offer(self, rate: float, seconds: float, client: Client) -> Offered:
        # The longest a request may hold its connection: waiting for one, then for its answer.
        longest_s = self.plan.connect_timeout_s + self.plan.timeout_s
        with self.log_path.open("a") as log:
            return offer(
                self.oha,
                self.url,
                rate,
                seconds,
                client,
                connections_for_rate(rate, longest_s),
                self.plan.timeout_s,
                self.objective_s,
                log,
                self.plan.connect_timeout_s,
                self.plan.client_shortfall,
            )

    @contextlib.contextmanager
    def _sampled(self):
        """The server's side while inside: (the queue sampler, the server-side summary, filled at
        the end: empty where no server was given)."""
        side: dict = {}
        monitor = Monitor(self.server) if self.server is not None else contextlib.nullcontext()
        with QueueSampler(self.port) as queue, monitor:
            yield queue, side
        if self.server is not None:
            summary = monitor.summary()
            side.update({key: summary.get(key) for key in SERVER_SIDE})

    def steady(self, client: Client, multiple: float, capacity: float, repeat: int = 0) -> Stretch:
        rate = round(multiple * capacity, 1)
        with self._sampled() as (queue, side):
            offered = self._offer(rate, self.plan.hold_s, client)
        stretch = stretch_of(Phase.STEADY, multiple, offered, queue.samples, self.objective_s, side)
        return dataclasses.replace(stretch, repeat=repeat)

    def burst(self, client: Client, capacity: float) -> Stretch:
        """``after`` of capacity throughout, the burst's rest on top for its seconds; recovery read
        on the throughout one from the burst's end."""
        burst = self.plan.burst
        after_rate = round(burst.after * capacity, 1)
        on_top = round(max(burst.multiple - burst.after, 0) * capacity, 1)
        found: dict[str, Offered] = {}
        top = threading.Thread(target=lambda: found.update(top=self._offer(on_top, burst.seconds, client)))
        with self._sampled() as (queue, side):
            top.start()
            throughout = self._offer(after_rate, burst.seconds + burst.after_s, client)
            top.join()
        both = merged(throughout, found.get("top"))
        until = burst.seconds + burst.after_s
        back = recovery_s(
            throughout.answers, burst.seconds, until, after_rate, self.objective_s, burst.window_s, burst.share
        )
        stretch = stretch_of(Phase.BURST, burst.multiple, both, queue.samples, self.objective_s, side)
        return Stretch(**{**stretch.__dict__, "recovery_s": back, "recovered": back is not None})


def merged(one: Offered, other: Offered | None) -> Offered:
    """Two clients' stretches as one (their counts, errors and requests due summed, answers
    together; the rate the burst's, the seconds the longer one's)."""
    if other is None:
        return one
    counts = {met: one.counts.get(met, 0) + other.counts.get(met, 0) for met in map(str, Met)}
    errors = {key: one.errors.get(key, 0) + other.errors.get(key, 0) for key in {*one.errors, *other.errors}}
    rate, answers = round(one.rate + other.rate, 1), one.answers + other.answers
    limited = one.client_limited or other.client_limited
    return Offered(
        rate,
        one.seconds,
        one.client,
        counts,
        answers,
        errors,
        due=one.due + other.due,
        connections=one.connections + other.connections,
        client_limited=limited,
    )


def stretch_of(
    phase: Phase, multiple: float, offered: Offered, queue: list, objective_s: float, server_side: dict
) -> Stretch:
    """A stretch's record: its counts, the p99 of its answers, its goodput, the server's side."""
    latencies = [a.latency_s for a in offered.answers if a.status < 500]
    p99 = round(float(np.percentile(latencies, 99)) * 1000, 3) if latencies else None
    depths = [depth for _, depth in queue if depth is not None]
    return Stretch(
        phase=str(phase),
        multiple=multiple,
        rate=offered.rate,
        seconds=offered.seconds,
        due=offered.due,
        client=offered.client,
        connections=offered.connections,
        offered_rate=offered.offered_rate,
        sent_rate=offered.sent_rate,
        client_limited=offered.client_limited,
        counts=offered.counts,
        errors=offered.errors,
        answered_p99_ms=p99,
        goodput_rps=round(offered.counts[Met.WITHIN] / offered.seconds, 2),
        queue_max=max(depths) if depths else None,
        queue=tuple(queue),
        server_side=dict(server_side),
    )
