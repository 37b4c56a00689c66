"""One cell, start to finish: the order of its phases, teardown, the outcome.

    prepare → start → ready → verify → warmup → load (→ idle) → stop → write

Launching is ``serverbench.cell.launch``, measuring ``serverbench.cell.measure``. Whatever
the server or load tool does is recorded: the job only fails (non-zero) on a
harness bug, and even then the server tree is stopped first.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path

from serverbench import __version__, files
from serverbench.cell import rate, verify
from serverbench.cell.errors import CellFailed, CellSkipped, Interrupted, raise_interrupted
from serverbench.cell.launch import Launch
from serverbench.cell.measure import Measure
from serverbench.host.cgroups import HarnessPlacement
from serverbench.host.cpuidle import IdleLatencyHold
from serverbench.host.runenv import make_rundir, run_env
from serverbench.plan.config import config_hash, effective_profile
from serverbench.plan.shapes import Cell
from serverbench.record import flags as flagging
from serverbench.record.model import CellRecord, RecordCell


class CellRun:
    def __init__(self, config: dict, cell: Cell, json_path, raw_path, log_path, position=None, capacity_path=None):
        self.config, self.cell, self.capacity_path = config, cell, capacity_path
        self.profile = effective_profile(config, cell.profile)
        spec = config["catalogue"][cell.server]
        fields = dataclasses.asdict(cell)
        self.record = CellRecord(cell=RecordCell(**fields, language=spec["language"], family=spec.get("family")))
        # Where the cell stood in the seeded random order of its matrix (1 = first).
        self.record.order = {"seed": config["seed"], "position": position}
        self.json_path, self.raw_path, self.log_path = Path(json_path), Path(raw_path), Path(log_path)
        self.env = run_env()
        self.launch: Launch | None = None
        self.raw_text = ""

    def phase(self, name: str) -> None:
        self.record.phase = name
        self.record.timing[name] = round(time.time(), 4)

    def run(self) -> CellRecord:
        record = self.record
        record.timing["job_start"] = round(time.time(), 4)
        # The harness's own interpreter (a fact of the run, not a language compared).
        record.harness = dict(version=__version__, python=sys.version.split()[0], cpus=self.profile.harness_cpus)
        with (
            HarnessPlacement(self.profile.harness_cpus) as placement,
            IdleLatencyHold(self.profile.cpu_latency_us) as idle,
        ):
            self._run()
        record.harness.update(placement.describe())
        record.cpu_idle = idle.describe()
        self._write()
        return record

    def _run(self) -> None:
        record = self.record
        record.config_sha256 = config_hash(self.config)
        record.thresholds = dict(self.config["flags"])
        record.environment = os.path.relpath(Path(self.config["results"]) / "environment.json", self.json_path.parent)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_bytes(b"")
        rundir = make_rundir()
        try:
            self._measure(rundir)
            record.status, record.reason = "ok", None
        except CellSkipped as exc:
            record.status, record.reason = "skipped", str(exc)
        except CellFailed as exc:
            record.status, record.reason = "failed", str(exc)
            self.raw_text = exc.raw_text or self.raw_text
        except Interrupted:
            # An interrupted cell was not measured: leave no result, so a rerun redoes it.
            raise
        except BaseException as exc:
            record.status, record.reason = "failed", f"harness error: {exc.__class__.__name__}: {exc}"
            record.traceback = traceback.format_exc()
            self._teardown()
            self._write()
            raise
        finally:
            self._teardown()
            shutil.rmtree(rundir, ignore_errors=True)
        ceiling = self.config.get("comparisons", {}).get("ceiling")
        record.flags = flagging.cell_flags(record, self.config["flags"], ceiling)

    def _measure(self, rundir: Path) -> None:
        record, profile = self.record, self.profile
        record.scaling = profile.scaling
        record.workload = {"name": self.cell.workload, "path": self.config["app_workloads"][self.cell.workload]["path"]}
        self.phase("prepare")
        if self.cell.is_rate:
            record.open_loop = rate.rate_plan(self.capacity_path, self.cell.fraction, profile.open_loop)
        self.launch = launch = Launch(self.config, self.cell, profile, record, rundir, self.log_path, self.env)
        launch.prepare()
        measure = Measure(self.config, self.cell, profile, record, launch, self.env, plan=record.open_loop)
        launch.isolate()
        self.phase("start")
        launch.start()
        self.phase("ready")
        launch.wait_ready()
        self.phase("verify")
        check = verify.verify(
            launch.host, launch.port, launch.expected_answer, record.workload["path"], profile.timeout
        )
        record.verify = check
        if not check.ok:
            launch.check_alive("verification")
            raise CellFailed(f"wrong answer: {check.reason}{launch.oom_note()}")
        if profile.warmup > 0:
            self.phase("warmup")
            measure.warm_up()
        self.phase("load")
        measure.load(check.keepalive, self.phase)
        self.raw_text = measure.raw_text

    def _write(self) -> None:
        self.record.timing["job_end"] = round(time.time(), 4)
        self.record.raw = {"load": self.raw_path.name, "server_log": self.log_path.name}
        files.write_atomic(self.raw_path, self.raw_text)
        files.write_json(self.json_path, self.record.to_dict())

    def _teardown(self) -> None:
        if self.launch is not None:
            if self.launch.server is not None:
                self.phase("stop")
            self.launch.stop()
            self.launch = None


def run_cell(config: dict, cell: Cell, json_path, raw_path, log_path, position=None, capacity_path=None) -> dict:
    """Measure one cell and write its record (returned as written); a rate cell needs its capacity file."""
    previous = {sig: signal.signal(sig, raise_interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return CellRun(config, cell, json_path, raw_path, log_path, position, capacity_path).run().to_dict()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
