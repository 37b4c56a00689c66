"""The cell's record, assembled once from its phases' sections and frozen before
it is written: the launch's (``Launched``), the measurement's (``Measured``),
and how the phases went (``Outcome``); then its flags, judged on it."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from serverbench import __version__
from serverbench.host.environment import host_facts
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.plan.digest import config_hash
from serverbench.plan.shapes import Cell, Profile
from serverbench.record import flags as flagging
from serverbench.record.model import CellRecord
from serverbench.record.sections import (
    CpuIdle,
    Harness,
    HostSection,
    IsolationSection,
    OpenLoop,
    Order,
    Raw,
    RecordCell,
    Scaling,
    Verification,
    WorkloadSection,
)


@dataclass
class Outcome:
    """How the cell's phases went: how it ended, the phase it reached and when each began."""

    status: str = "failed"
    reason: str | None = "harness did not finish the cell"
    phase: str | None = None
    timing: dict[str, float] = field(default_factory=dict)
    verify: Verification | None = None
    plan: dict | None = None  # a rate cell's (serverbench.plan.rates), before its load
    traceback: str | None = None
    position: int | None = None  # the cell's place in its matrix's seeded order (1 = first)

    def begin(self, phase: str) -> None:
        self.phase = phase
        self.timing[phase] = round(time.time(), 4)


@dataclass(frozen=True)
class Files:
    """Where the record goes, and the files beside it."""

    record: Path
    raw: Path
    server_log: Path


def _mix_paths(config: dict, cell: Cell) -> dict | None:
    """A mixed workload's paths and weights ({"/plaintext": 3, "/db": 1}); None for one path."""
    known = apps.workloads(config, cell.profile)
    mix = known[cell.workload].get("mix")
    return {known[name]["path"]: weight for name, weight in mix.items()} if mix else None


def assemble(config: dict, cell: Cell, profile: Profile, outcome: Outcome, parts: tuple, files: Files) -> CellRecord:
    """The record of a cell from its phases' sections (``parts``: the launch's ``Launched``, the
    measurement's ``Measured``, the harness placement's and the idle hold's descriptions)."""
    launched, measured, placement, idle = parts
    spec = server_entry(config, cell.server)
    workload = apps.workloads(config, cell.profile)[cell.workload]
    planned = OpenLoop.from_dict(outcome.plan) if outcome.plan else None
    draft = CellRecord(
        cell=RecordCell(
            **dataclasses.asdict(cell),
            language=spec.language,
            family=spec.family,
            app=apps.app_name(config, cell.profile),
        ),
        status=outcome.status,
        reason=outcome.reason,
        phase=outcome.phase,
        load=measured.load,
        server=dataclasses.replace(
            launched.server, usage=measured.usage, samples=measured.samples, autoscale=measured.autoscale
        ),
        client=measured.client,
        isolation=launched.isolation or IsolationSection(),
        verify=outcome.verify,
        timing={**outcome.timing, "job_end": round(time.time(), 4)},
        raw=Raw(load=files.raw.name, server_log=files.server_log.name),
        # The harness's own interpreter (a fact of the run, not a language compared).
        harness=dataclasses.replace(Harness.from_dict(placement), version=__version__, python=sys.version.split()[0]),
        host=HostSection.from_dict(host_facts()),
        order=Order(seed=config["seed"], round=cell.repeat, position=outcome.position),
        config_sha256=config_hash(config),
        environment=os.path.relpath(Path(config["results"]) / "environment.json", files.record.parent),
        scaling=Scaling.from_dict(profile.scaling),
        workload=WorkloadSection(name=cell.workload, path=workload.get("path"), mix=_mix_paths(config, cell)),
        time_wait=launched.time_wait,
        network=launched.network,
        database=launched.database,
        limits=launched.limits,
        isolation_image=launched.image,
        fairness=measured.fairness,
        warmup=measured.warmup,
        checks=measured.checks,
        steady=measured.steady,
        windows=measured.windows,
        open_loop=measured.open_loop or planned,
        cpu_idle=CpuIdle.from_dict(idle),
        thresholds=dict(config["flags"]),
        traceback=outcome.traceback,
    )
    ceiling = config.get("comparisons", {}).get("ceiling")
    return dataclasses.replace(draft, flags=flagging.cell_flags(draft, config["flags"], ceiling))
