"""front.csv: a row per run of the normal clients (``record.front.Run``) of every front job,
with its deployment and the slow clients' account; a deployment that never ran is a row with
its status and reason. The work lens's rows of the same servers, for the front's work."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from serverbench.lenses.front.record import Deployment, FrontRecord, Run, load_front
from serverbench.record.units import megabytes
from serverbench.record.vocabulary import Status

WORK_COLUMNS = ["profile", "workload", "server", "status", "instructions_per_request", "syscalls_per_request"]


def read_records(paths) -> list[FrontRecord]:
    return [load_front(json.loads(Path(path).read_text())) for path in paths]


def _deployment_columns(record: FrontRecord, deployment: Deployment) -> dict:
    return {
        "profile": record.profile,
        "server": record.server,
        "language": record.language,
        "app": record.app,
        "workload": record.workload,
        "deployment": deployment.name,
        "fronted": deployment.front is not None,
        "front": deployment.front,
        "protocol": deployment.protocol,
        "upstream_keepalive": deployment.upstream_keepalive,
        "deployment_status": deployment.status,
        "deployment_reason": deployment.reason,
        "workers": record.workers,
        "threads": record.threads,
        "holds_at_once": record.holds_at_once,
        "clients": record.clients,
        "cpus": len(record.cpus),
        "server_version": deployment.server_version,
        "front_version": deployment.front_version,
        "server_timeouts": json.dumps(deployment.timeouts, sort_keys=True),
        "front_timeouts": json.dumps(deployment.front_timeouts, sort_keys=True),
        "client_timeout_s": record.client_timeout_s,
        "pace_s": record.pace_s,
    }


def _run_columns(run: Run) -> dict:
    slow = run.slow
    outcomes = slow.outcomes if slow else {}
    return {
        "round": run.round,
        "kind": run.condition.kind,
        "relative": run.condition.relative,
        "slow_count": run.condition.count,
        "requests": run.requests,
        "rps": run.rps,
        "p99_ms": run.p99_ms,
        "failed": run.failed,
        "timed_out": run.timed_out,
        "cut_off": run.cut_off,
        "duration_s": run.duration_s,
        "pss_mb": megabytes(run.pss_bytes),
        **{f"slow_{name}": outcomes.get(name) for name in ("held", "answered", "closed", "refused", "failed")},
        "slow_held_s_median": slow.held_s_median if slow else None,
        "slow_first_closed_s": slow.first_closed_s if slow else None,
        "slow_busy_share": slow.busy_share if slow else None,
        "raw_header": run.raw_header,
    }


def front_table(records: list[FrontRecord]) -> pd.DataFrame:
    rows = []
    for record in records:
        by_name = {d.name: d for d in record.deployments}
        for deployment in record.deployments:
            runs = [run for run in record.runs if run.deployment == deployment.name]
            base = _deployment_columns(record, by_name[deployment.name])
            rows.extend({**base, **_run_columns(run)} for run in runs)
            if not runs:
                rows.append({**base, "kind": None})
    return pd.DataFrame(rows)


def work_rows(paths) -> pd.DataFrame:
    """The work lens's rows (work.csv) where the run counted work, else an empty table."""
    found = [path for path in paths if Path(path).name == "work.csv"]
    if not found:
        return pd.DataFrame(columns=WORK_COLUMNS)
    work = pd.read_csv(found[0])
    return work[work["status"] == Status.OK][WORK_COLUMNS]
