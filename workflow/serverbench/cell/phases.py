"""One cell, start to finish: the order of its phases, teardown, the outcome.

    prepare → start → ready → verify → warmup → load (→ idle) → stop → write

Launching is ``cell.launch``, measuring ``cell.measure`` (the app's queries ``cell.database``);
each fills its own sections, and the record is assembled from them once, at the end, and frozen
(``cell.assemble``). Whatever the server or load tool does is recorded: the job only fails
(non-zero) on a harness bug, and even then the server tree is stopped and the record written first.
"""

from __future__ import annotations

import time
from pathlib import Path

from serverbench import files
from serverbench.cell import rate
from serverbench.cell.assemble import Files, Outcome, assemble
from serverbench.cell.database import QueryAudit
from serverbench.cell.errors import Interrupted, interruptible
from serverbench.cell.launch import Launched
from serverbench.cell.measure import Measure, Measured
from serverbench.cell.session import HarnessErrors, ServerSession
from serverbench.host.cgroups import HarnessPlacement
from serverbench.host.cpuidle import IdleLatencyHold
from serverbench.host.runenv import run_env
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Cell
from serverbench.record.model import CellRecord


class CellRun:
    def __init__(self, config: dict, cell: Cell, json_path, raw_path, log_path, position=None, capacity_path=None):
        self.config, self.cell, self.capacity_path = config, cell, capacity_path
        self.profile = effective_profile(config, cell.profile)
        self.files = Files(Path(json_path), Path(raw_path), Path(log_path))
        self.outcome = Outcome(position=position)
        self.env = run_env()
        self.launched, self.measured = Launched(), Measured()
        self.raw_text, self.interrupted = "", False

    def run(self) -> CellRecord:
        self.outcome.timing["job_start"] = round(time.time(), 4)
        with (
            HarnessPlacement(self.profile.harness_cpus) as placement,
            IdleLatencyHold(self.profile.cpu_latency_us) as idle,
        ):
            try:
                self._run()
            except BaseException:
                self._write(placement, idle)  # a harness error: the record says it (Interrupted never gets here)
                raise
        return self._write(placement, idle)

    def _run(self) -> None:
        outcome = self.outcome
        self.files.server_log.parent.mkdir(parents=True, exist_ok=True)
        self.files.server_log.write_bytes(b"")
        session = ServerSession(
            self.config,
            self.cell.target,
            self.profile,
            self.files.server_log,
            self.env,
            before_stop=lambda _: outcome.begin("stop"),
            harness_errors=HarnessErrors.RAISE,
        )
        try:
            with session:
                self._measure(session)
        except Interrupted:
            # An interrupted cell was not measured: leave no result, so a rerun redoes it.
            self.interrupted = True
            raise
        finally:
            ending = session.ending
            outcome.status, outcome.reason, outcome.traceback = ending.status, ending.reason, ending.traceback
            self.raw_text = ending.raw_text or self.raw_text

    def _measure(self, session: ServerSession) -> None:
        profile, begin = self.profile, self.outcome.begin
        begin("prepare")
        if self.cell.is_rate:
            self.outcome.plan = rate.rate_plan(self.capacity_path, self.cell.fraction, profile.open_loop)
        self.launched = session.launch.found
        launch = session.prepare()
        measure = Measure(self.config, self.cell, profile, launch, plan=self.outcome.plan)
        self.measured = measure.found
        session.start(begin)
        begin("verify")
        check = self._verify(session, profile.timeout)
        if profile.warmup > 0:
            begin("warmup")
            measure.warm_up()
        begin("load")
        audit = QueryAudit(launch.database, launch.found.database, self.config, self.cell)
        measure.load(check.keepalive, begin)
        self.raw_text = audit.end(measure.found.load, measure.raw_text)

    def _verify(self, session: ServerSession, timeout: float):
        """Each path the workload requests answers as its check says (the session's one
        verification); the failing check, else the first, is the record's."""
        try:
            session.verify(timeout=timeout)
        finally:
            failing = [check for check in session.checks if not check.ok]
            self.outcome.verify = (failing or session.checks or [None])[0]
        return session.checks[0]

    def _write(self, placement, idle) -> CellRecord | None:
        """The record, assembled once and frozen, with the load tool's output beside it (none when interrupted)."""
        if self.interrupted:
            return None
        parts = (self.launched, self.measured, placement.describe(), idle.describe())
        record = assemble(self.config, self.cell, self.profile, self.outcome, parts, self.files)
        files.write_atomic(self.files.raw, self.raw_text)
        files.write_json(self.files.record, record.to_dict())
        return record


@interruptible()
def run_cell(config: dict, cell: Cell, json_path, raw_path, log_path, position=None, capacity_path=None) -> dict:
    """Measure one cell and write its record (returned as written); a rate cell needs its capacity file."""
    return CellRun(config, cell, json_path, raw_path, log_path, position, capacity_path).run().to_dict()
