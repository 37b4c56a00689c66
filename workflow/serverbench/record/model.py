"""The result of one cell: ``CellRecord``, versioned (``RECORD_SCHEMA``).

The JSON layout is the dataclasses' fields in order; ``load_record`` refuses
a record whose schema it does not know and reads every older one it does.
This stage imports no other: every stage may read a record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from serverbench.record.sections import (  # noqa: F401 (the record's types, resolved by name)
    ERROR_CLASSES,
    LATENCY_KEYS,
    Autoscale,
    Checks,
    ClientSection,
    CpuIdle,
    DatabaseSection,
    Fairness,
    Harness,
    HostSection,
    Image,
    IsolationSection,
    Limits,
    LoadResult,
    NetworkSection,
    OpenLoop,
    Order,
    Raw,
    RecordCell,
    RecordError,
    Scaling,
    Section,
    ServerSection,
    Steady,
    TimeWait,
    Usage,
    Verification,
    Warmup,
    Windows,
    WorkloadSection,
    _build,
)

# /2 added load.latency_note, warmup, checks, steady, thresholds, client.cpu_quota,
# limits.listen_backlog, harness placement and None for error classes a tool cannot
# observe; /3 added cell.fraction, open_loop and latency_ms.p99_9 (rate cells);
# /5 added windows (answers per short window, measured durations); /6 added host (the machine,
# and the scheduler's job that placed the cell on it); /7 added cell.app (the app hosted);
# /8 added database (the app's database and the statements it ran).
# Older records read with those unset.
RECORD_SCHEMA = "serverbench.cell/8"
KNOWN_RECORD_SCHEMAS = frozenset(
    {
        "serverbench.cell/1",
        "serverbench.cell/2",
        "serverbench.cell/3",
        "serverbench.cell/4",
        "serverbench.cell/5",
        "serverbench.cell/6",
        "serverbench.cell/7",
        RECORD_SCHEMA,
    }
)


@dataclass(frozen=True)
class CellRecord(Section):
    """A cell's result, assembled once by the cell's phases (serverbench.cell.phases) and
    frozen: its sections are read, never replaced (``dataclasses.replace`` makes another)."""

    cell: RecordCell
    schema: str = RECORD_SCHEMA
    status: str = "failed"
    reason: str | None = "harness did not finish the cell"
    phase: str | None = None
    load: LoadResult | None = None
    server: ServerSection = field(default_factory=ServerSection)
    client: ClientSection = field(default_factory=ClientSection)
    isolation: IsolationSection = field(default_factory=IsolationSection)
    verify: Verification | None = None
    timing: dict[str, float] = field(default_factory=dict)  # phase → when it began (epoch seconds)
    raw: Raw = field(default_factory=Raw)
    flags: list[str] = field(default_factory=list)
    harness: Harness | None = None
    host: HostSection | None = None
    order: Order | None = None
    config_sha256: str | None = None
    environment: str | None = None
    scaling: Scaling | None = None
    workload: WorkloadSection | None = None
    time_wait: TimeWait | None = None
    network: NetworkSection | None = None
    database: DatabaseSection | None = None
    limits: Limits | None = None
    isolation_image: Image | str | None = None  # a tag alone in records before cell/3
    fairness: Fairness | None = None
    warmup: Warmup | None = None
    checks: Checks | None = None
    steady: Steady | None = None
    windows: Windows | None = None
    open_loop: OpenLoop | None = None
    cpu_idle: CpuIdle | None = None
    thresholds: dict[str, float] | None = None  # flags.* in config: what the flags were judged against
    traceback: str | None = None

    @classmethod
    def from_dict(cls, data: dict) -> CellRecord:
        schema = data.get("schema")
        if schema not in KNOWN_RECORD_SCHEMAS:
            raise RecordError(
                f"unknown record schema {schema!r}; this serverbench reads {sorted(KNOWN_RECORD_SCHEMAS)}"
            )
        return _build(cls, data)


def load_record(path: str | Path) -> CellRecord:
    """A cell's result from its JSON file; RecordError names the file when it cannot be read."""
    try:
        return CellRecord.from_dict(json.loads(Path(path).read_text()))
    except RecordError as exc:
        raise RecordError(f"{path}: {exc}") from None


def cell_status(statuses) -> str:
    """A cell's status from its repeats': ``ok`` when all are, ``partial`` when some are,
    else the first of theirs (``failed`` before ``skipped``)."""
    statuses = set(statuses)
    if statuses == {"ok"}:
        return "ok"
    return "partial" if "ok" in statuses else sorted(statuses)[0]
