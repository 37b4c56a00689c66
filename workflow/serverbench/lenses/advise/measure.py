"""Your deployment, decided: one job per (profile, server) of a profile with ``advise``.

The server's settings (its worker models, workers, threads: the catalogue's ``search``) are
searched adaptively (``plan.search``); each setting is a server started through the one
``ServerSession`` on the machine the profile emulates (its ``server_cpus``, its
``memory_limit``), verified, and asked for its capacity at the p99 objective
(``cell.objective``) and its memory under that load; a reading that would end a walk is
measured once more from a fresh start (``search``). The setting the search found best and its
runner-up are then measured again from their deployed files, as a user starts them
(``deploy``: ``gunicorn --config FILE``), one after the other: whether the recommendation
reproduces. Under ``advise.cpu_limit`` every start's cgroup holds that quota, its cpuset the
host's CPUs (a container's view, whose rule of thumb counts the host's CPUs): the quota is
read back at each start, and the CFS periods it throttled over the rates offered are kept
beside capacity and PSS. At the best setting the server is started once more and reloaded under load
(operations' machinery): a server that fails requests on reload is never recommended. Everything measured is one frozen
``AdviceRecord``, the load tool's raw output beside it; a server that cannot start is a
recorded failure, and no process outlives the job.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from serverbench import files
from serverbench.cell import loadgen, servers
from serverbench.cell.errors import CellFailed, CellSkipped, interruptible
from serverbench.cell.launch import placeholders_used
from serverbench.cell.objective import Found, ObjectiveProbe, connections_for
from serverbench.cell.rawlog import RawLog
from serverbench.cell.session import ServerSession
from serverbench.cell.underload import reload_under_load
from serverbench.host.cgroups import CpuThrottling
from serverbench.lenses.advise import deploy, search
from serverbench.lenses.advise.record import ADVICE_SCHEMA, AdviceRecord, Point, ReloadCheck, ReloadOutcome, Role
from serverbench.lenses.advise.settings import AdviseSettings
from serverbench.plan import apps
from serverbench.plan.catalogue import SearchSpec, server_entry
from serverbench.plan.config import available_cpus, effective_profile
from serverbench.plan.recycling import recycling_argv, with_argv
from serverbench.plan.shapes import Profile, Target
from serverbench.record.units import megabytes
from serverbench.record.vocabulary import Status

FAILURES = (OSError, servers.ServerError, loadgen.ToolMissing)


def space_of(config: dict, model: str, cpus: int) -> search.Space:
    """A worker model's settings: the axes its command takes, and the rule of thumb for ``cpus``."""
    entry = server_entry(config, model)
    spec = entry.search or SearchSpec()
    used = placeholders_used(entry)
    workers = search.Axis(*spec.workers) if spec.workers and "workers" in used else None
    threads = search.Axis(*spec.threads) if spec.threads and "threads" in used else None
    start_workers = search.rule_of_thumb(spec.start_workers, cpus)
    start_threads = search.rule_of_thumb(spec.start_threads, cpus)
    start = search.Setting(
        model,
        workers.clip(start_workers) if workers else start_workers,
        threads.clip(start_threads) if threads else start_threads,
    )
    return search.Space(start, workers, threads)


class Advising:
    """One server's search: every setting measured, as points, and the reload check."""

    def __init__(self, config: dict, profile: Profile, server: str, json_path, log_path):
        self.config, self.profile, self.server = config, profile, server
        self.workload = profile.workloads[0]
        self.log_path = Path(log_path)
        self.raw = RawLog(str(Path(json_path).with_suffix(".raw.txt")))
        self.settings: AdviseSettings = profile.settings("advise")
        self.cpu_limit = self.settings.cpu_limit
        if self.cpu_limit is not None:
            # As in a container: the quota bounds the time, the cpuset is every CPU the host has.
            self.profile = dataclasses.replace(profile, server_cpus=sorted(available_cpus()))
        self.budget = self.settings.memory_budget_bytes
        self.points: list[Point] = []
        self.rules: set[search.Setting] = set()
        self.stopped_at_budget: list[str] = []  # the models whose search ran out of points still rising
        # Per model, the recycling every setting ran with (the profile's `advise.recycle`): the argv
        # added to its command, or why the server could not take it.
        self.recycling: dict[str, dict] = {}

    def search_all(self, models: tuple[str, ...]) -> list[search.Measured]:
        """Every reading of every model's search."""
        measured = []
        cpus = len(self.profile.server_cpus)
        for model in models:
            space = space_of(self.config, model, cpus)
            self.rules.add(space.start)
            walk = search.Search.asked(space, self.measure, self.settings)
            measured.extend(walk.run())
            if walk.stopped_at_budget:
                self.stopped_at_budget.append(model)
        return measured

    def _session(self, setting: search.Setting) -> ServerSession:
        lived = dataclasses.replace(self.profile, workers=setting.workers, threads=setting.threads)
        target = Target(self.profile.name, setting.model, self.workload)
        with self.log_path.open("a") as log:
            log.write(f"serverbench: {setting.label()}\n")
        return ServerSession(self.config_for(setting.model), target, lived, self.log_path, failures=FAILURES)

    def config_for(self, model: str) -> dict:
        """The config a model's settings run with: its command with the profile's fixed recycling."""
        config = self._limited(model)
        asked = self.settings.recycle
        if asked is None:
            return config
        recycle = server_entry(config, model).recycle
        argv, cannot = recycling_argv(recycle, asked.max_requests, asked.jitter)
        self.recycling[model] = {"argv": argv, "reason": cannot}
        return with_argv(config, model, argv, None if cannot else asked.max_requests)

    def _limited(self, model: str) -> dict:
        """The config with the model's entry held to the CPU limit (its ``cpu_quota``)."""
        if self.cpu_limit is None:
            return self.config
        return {
            **self.config,
            "catalogue": {
                **self.config["catalogue"],
                model: {**self.config["catalogue"][model], "cpu_quota": self.cpu_limit},
            },
        }

    def _quota_held(self, session: ServerSession) -> float | None:
        """The quota the server's cgroup holds, read back: under a limit, the limit or the setting fails."""
        isolation = session.launch.isolation
        held = isolation.cpu_quota_read() if isolation is not None else None
        if self.cpu_limit is not None and (held is None or abs(held - self.cpu_limit) > 1e-9):
            problem = getattr(isolation, "problem", None) or f"its cgroup reads a quota of {held}"
            raise CellFailed(f"the CPU limit of {self.cpu_limit:g} is not held: {problem}")
        return held

    @staticmethod
    def _throttling(session: ServerSession) -> CpuThrottling | None:
        isolation = session.launch.isolation
        return isolation.throttling() if isolation is not None else None

    def _verified(self, session: ServerSession) -> str:
        """The workload's path, once its answer is checked (a wrong answer fails the setting)."""
        check = session.verify()[0]
        if check.rule_problems:  # a recommendation never rests on an answer that breaks the rules
            raise CellFailed(f"the answer breaks the workload's header rules: {'; '.join(check.rule_problems)}")
        return apps.workloads(self.config, self.profile.name)[self.workload]["path"]

    def measure(self, setting: search.Setting, deployed: dict | None = None) -> search.Measured:
        """One reading of a setting, a fresh start of the server: from the catalogue's command,
        or (``deployed``: its recommendation row) from its deployed file as a user starts it."""
        started = time.monotonic()
        connections = connections_for(setting.workers, setting.threads, self.settings.search.max_connections)
        found = Found()
        quota, throttled = None, None
        session = self._session(setting)
        read_before = any(p.role is not Role.REPRODUCE and self._setting_of(p) == setting for p in self.points)
        role = Role.REPRODUCE if deployed else Role.CONFIRM if read_before else Role.SEARCH
        with session:
            if deployed is not None:
                self._from_deployed_file(session, deployed)
            launch = session.start()
            path = self._verified(session)
            label = f"{setting.label()} ({role})"
            probe = ObjectiveProbe(self.config, self.profile, launch, path, self.raw, label, self.settings.search)
            quota, before = self._quota_held(session), self._throttling(session)
            found = probe.capacity(connections)
            after = self._throttling(session)
            throttled = after.since(before) if before and after else None
        ending = session.ending
        point = Point(
            model=setting.model,
            workers=setting.workers,
            threads=setting.threads,
            status=ending.status,
            reason=ending.reason,
            peak_rps=found.peak_rps,
            connections=connections,
            met_rps=found.met,
            missed_rps=found.missed,
            limit=found.limit if ending.ok else None,
            memory_bytes=found.memory_at_met(),
            steps=tuple(found.steps),
            rule_of_thumb=setting in self.rules,
            seconds=round(time.monotonic() - started, 2),
            role=role,
            p99_ms=p99_at_met(found),
            cpu_quota=quota,
            periods=throttled.periods if throttled else None,
            throttled_periods=throttled.throttled_periods if throttled else None,
            throttled_s=throttled.throttled_s if throttled else None,
        )
        self.points.append(point)
        return search.Measured(setting, search.Capacity(found.met, found.missed), point.memory_bytes, ending.ok)

    @staticmethod
    def _setting_of(point: Point) -> search.Setting:
        return search.Setting(point.model, point.workers, point.threads)

    def _from_deployed_file(self, session: ServerSession, row: dict) -> None:
        """The session's server started from the setting's deployed file (``deploy.render``) at
        the session's address, written into its run directory."""
        entry = server_entry(self.config, row["model"])
        if entry.deploy is None:
            raise CellSkipped(f"the catalogue gives {row['model']} no `deploy`")
        launch = session.prepare()
        text, run = deploy.render(self.config, self.profile.name, row, (launch.host, launch.port))
        path = session.rundir / entry.deploy.file
        files.write_atomic(path, text)
        launch.use_command(run, {"file": str(path)})
        with self.log_path.open("a") as log:
            log.write(f"serverbench: from its deployed file: {' '.join(launch.argv)}\n")

    def reproduce(self, chosen: search.Measured, runner_up: search.Measured | None) -> None:
        """The recommended setting and its runner-up measured again from their deployed files,
        one after the other (each reading a ``Role.REPRODUCE`` point)."""
        for found in (chosen, runner_up):
            if found is None:
                continue
            setting = found.setting
            row = {
                "profile": self.profile.name,
                "model": setting.model,
                "workers": setting.workers,
                "threads": setting.threads,
                "capacity_rps": found.capacity.met,
                "objective_p99_ms": self.settings.search.objective_p99_ms,
                "cpus": len(self.profile.server_cpus),
                "cpu_limit": self.cpu_limit,
                "memory_mb": megabytes(found.memory_bytes),
            }
            self.measure(setting, deployed=row)

    def reload_check(self, setting: search.Setting | None) -> ReloadCheck:
        spec = self.settings
        if setting is None:
            return ReloadCheck("", 0, 0, ReloadOutcome.NOT_MEASURED, 0, 0, 0, 0, None, "no setting met the objective")
        plan = {
            "reloads": spec.reloads,
            "reload_every": spec.reload_every,
            "concurrency": connections_for(setting.workers, setting.threads, spec.reload_concurrency),
        }
        found: dict = {}
        session = self._session(setting)
        with session:
            found = reload_under_load(session.start(), plan)
        if not session.ending.ok:
            found = {"status": "broken", "reason": session.ending.reason, "reloads": []}
        return reload_from(setting, found, spec.reloads)


def p99_at_met(found: Found) -> float | None:
    """p99 (ms) of the last run at the highest rate that met the objective."""
    at = [s for s in found.steps if s.met and s.offered_rps == found.met]
    return at[-1].p99_ms if at else None


def reload_from(setting: search.Setting, found: dict, asked: int) -> ReloadCheck:
    """operations' reload figures as the advice reads them."""
    windows = found.get("reloads") or []
    failed = sum(w["failed"] for w in windows)
    if found["status"] == "not declared":
        outcome = ReloadOutcome.NOT_DECLARED
    elif found["status"] == "broken":
        outcome = ReloadOutcome.BROKEN
    elif asked == 0:
        outcome = ReloadOutcome.NOT_MEASURED
    else:
        outcome = ReloadOutcome.FAILED_REQUESTS if failed else ReloadOutcome.CLEAN
    gaps = [w["longest_gap_s"] for w in windows if w["longest_gap_s"] is not None]
    return ReloadCheck(
        setting.model,
        setting.workers,
        setting.threads,
        outcome,
        len(windows),
        failed,
        sum(w["dropped_reused"] for w in windows),
        (found.get("control") or {}).get("failed", 0),
        max(gaps) if gaps else None,
        found.get("reason"),
    )


def overall(points: list[Point]) -> tuple[Status, str | None]:
    """The job's status: ok where a setting was measured, else the first point's ending."""
    if any(p.status is Status.OK for p in points):
        return Status.OK, None
    first = points[0] if points else None
    return (first.status, first.reason) if first else (Status.FAILED, "no setting was measured")


@interruptible()
def run_advise(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """One server's settings searched, the chosen one reloaded, the record written (and returned)."""
    started = time.monotonic()
    profile = effective_profile(config, profile_name)
    entry = server_entry(config, server)
    models = (server, *(entry.search.models if entry.search else ()))
    advising = Advising(config, profile, server, json_path, log_path)
    advising.log_path.parent.mkdir(parents=True, exist_ok=True)
    advising.log_path.write_bytes(b"")
    Path(advising.raw.path).write_bytes(b"")
    pooled = search.pool(advising.search_all(models))
    margin = advising.settings.margin
    chosen = search.best(pooled, advising.budget, margin)
    if chosen is not None:
        advising.reproduce(chosen, search.runner_up(pooled, chosen, advising.budget, margin))
    reload = advising.reload_check(chosen.setting if chosen else None)
    points = list(advising.points)
    status, reason = overall(points)
    record = AdviceRecord(
        schema=ADVICE_SCHEMA,
        profile=profile_name,
        server=server,
        language=entry.language,
        app=apps.app_name(config, profile_name),
        workload=advising.workload,
        objective_p99_ms=float(advising.settings.search.objective_p99_ms),
        memory_budget_bytes=advising.budget,
        margin=margin,
        cpus=len(advising.profile.server_cpus),
        cpu_limit=advising.cpu_limit,
        memory_limit_bytes=profile.memory_limit,
        models=models,
        status=status,
        reason=reason,
        points=tuple(points),
        reload=reload,
        raw=Path(advising.raw.path).name,
        seconds=round(time.monotonic() - started, 2),
        stopped_at_budget=tuple(advising.stopped_at_budget),
        recycling=advising.recycling,
    )
    files.write_json(json_path, record.to_dict())
    return record.to_dict()
