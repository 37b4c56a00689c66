"""Which balancer idle timeout is safe for this server? One job per (profile, server) of a
profile with ``idle_pool`` (docs/front.md, "The balancer's idle pool").

The server runs, one deployment after another, each a ``ServerSession`` of its own: bare at its
own keep-alive (its catalogue entry's ``keepalive``), bare at a raised one (its ``argv`` appended
to its command, where its command line sets it) and as each of its deployments behind a front
the profile lists, at its own keep-alive. On each, the balancer's pool (sweep.sweep): connections
answered once, held idle, reused after each idle time swept around the server's keep-alive; bare
at its own, idle connections held beside a fresh client (sweep.cost), pooled and pre-opened.
A deployment that cannot start is a recorded ending; no process outlives the job.
"""

from __future__ import annotations

import time
from pathlib import Path

from serverbench import files
from serverbench.cell import loadgen, servers
from serverbench.cell.errors import interruptible
from serverbench.cell.session import ServerSession
from serverbench.cell.wire import request
from serverbench.lenses.idlepool.pool import Pool
from serverbench.lenses.idlepool.settings import IdlePoolSettings
from serverbench.lenses.idlepool.sweep import DEFAULT, RAISED, cost, sweep
from serverbench.plan import apps
from serverbench.plan.catalogue import ServerEntry, server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Profile, Target
from serverbench.record.vocabulary import Status

IDLE_POOL_SCHEMA = "serverbench.idlepool/1"
FAILURES = (OSError, servers.ServerError, loadgen.ToolMissing)


def fronted_of(config: dict, profile: Profile, server: str) -> list[str]:
    """Each deployment of ``server`` behind a front that the profile lists."""
    return [
        name
        for name in profile.servers
        if (entry := server_entry(config, name)).fronted is not None and entry.fronted.server == server
    ]


def plans(config: dict, profile: Profile, entry: ServerEntry, spec: IdlePoolSettings) -> list[tuple]:
    """(deployment, keep-alive setting, its seconds, the argv appended to the command or None)."""
    own = float(entry.keepalive.default_s)
    found = [(entry.name, DEFAULT, own, None)]
    if entry.keepalive.argv:
        found.append((entry.name, RAISED, own * spec.raise_factor, entry.keepalive.argv))
    return found + [(name, DEFAULT, own, None) for name in fronted_of(config, profile, entry.name)]


def not_swept(entry: ServerEntry, spec: IdlePoolSettings) -> str | None:
    """Why the server is not swept (None: it is)."""
    if entry.keepalive is None:
        return f"{entry.name} declares no keep-alive timeout (its catalogue entry's keepalive)"
    if entry.keepalive.default_s > spec.max_keepalive_s:
        return (
            f"{entry.name}'s keep-alive ({entry.keepalive.said()}) is longer than the profile's "
            f"max_keepalive_s {spec.max_keepalive_s:g}: its sweep would take minutes an idle time"
        )
    return None


class Sweeping:
    """One server's job: its deployments in turn, the sweep's and the cost's rows."""

    def __init__(self, config: dict, profile: Profile, entry: ServerEntry, log_path):
        self.config, self.profile, self.entry, self.log_path = config, profile, entry, log_path
        self.spec: IdlePoolSettings = profile.settings("idle_pool")
        self.workload = profile.workloads[0]
        self.path = apps.workloads(config, profile.name)[self.workload]["path"]
        self.rows: list[dict] = []
        self.costs: list[dict] = []
        self.deployments: list[dict] = []

    def run(self, name: str, setting: str, keepalive_s: float, argv) -> None:
        target = Target(self.profile.name, name, self.workload)
        session = ServerSession(self.config, target, self.profile, self.log_path, failures=FAILURES)
        with session:
            launch = session.prepare()
            if argv:
                launch.use_command([*self.entry.command, *argv], {"keepalive_s": f"{keepalive_s:g}"})
            session.start()
            session.verify()
            sent = request("GET", self.path, headers=[("Host", launch.host)])
            pool = Pool(launch.host, launch.port, sent, int(self.entry.expect.get("status", 200)), self.spec.timeout_s)
            own = float(self.entry.keepalive.default_s)
            # Every deployment swept at the idle times around the server's own keep-alive.
            found = sweep(pool, self.entry.name, name, setting, own, self.spec.connections, self.spec.factors)
            self.rows += [{**row, "keepalive_s": keepalive_s} for row in found]
            if name == self.entry.name and setting == DEFAULT:
                holds = self.profile.workers * self.profile.threads
                for pre_opened in (False, True):
                    self.costs += cost(pool, self.entry.name, name, holds, self.spec.fresh_wait_s, pre_opened)
        ending = session.ending
        self.deployments.append(
            {
                "name": name,
                "keepalive": setting,
                "keepalive_s": keepalive_s,
                "status": ending.status,
                "reason": ending.reason,
            }
        )


@interruptible()
def run_idle_pool(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """One server's deployments swept; the record written whatever they did."""
    started = time.monotonic()
    profile = effective_profile(config, profile_name)
    entry = server_entry(config, server)
    sweeping = Sweeping(config, profile, entry, log_path)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(log_path, "")
    why = not_swept(entry, sweeping.spec)
    if why is None:
        for plan in plans(config, profile, entry, sweeping.spec):
            sweeping.run(*plan)
    bare = [d for d in sweeping.deployments if d["name"] == server and d["keepalive"] == DEFAULT]
    status = Status.SKIPPED if why else (bare[0]["status"] if bare else Status.FAILED)
    record = {
        "schema": IDLE_POOL_SCHEMA,
        "profile": profile_name,
        "server": server,
        "language": entry.language,
        "workers": profile.workers,
        "threads": profile.threads,
        "keepalive_s": entry.keepalive.default_s if entry.keepalive else None,
        "keepalive_setting": entry.keepalive.setting if entry.keepalive else None,
        "connections": sweeping.spec.connections,
        "deployments": sweeping.deployments,
        "sweeps": sweeping.rows,
        "costs": sweeping.costs,
        "status": status,
        "reason": why or (bare[0]["reason"] if bare else None),
        "seconds": round(time.monotonic() - started, 2),
    }
    files.write_json(json_path, record)
    return record
