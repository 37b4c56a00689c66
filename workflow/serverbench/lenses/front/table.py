"""front.csv: a row per run of the normal clients (``record.front.Run``) of every front job,
with its deployment and the slow clients' account; a deployment that never ran is a row with
its status and reason. The figures other lenses count per request of the same servers (their
offered checks with a margin: the work lens's instructions and syscalls), for the front's work."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from serverbench.lens import Layout
from serverbench.lenses.front.record import Deployment, FrontRecord, Run, load_front
from serverbench.record.units import megabytes
from serverbench.record.vocabulary import Status

# A counted check's row: the figure of one server in one profile's workload.
KEY_COLUMNS = ["profile", "workload", "server"]


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


@dataclass(frozen=True)
class CountedCheck:
    """A figure another lens counts per request and offers (``lens.Check`` with a ``margin_key``):
    its column and the margin within which two deployments' figures are the same."""

    name: str
    margin: float


@dataclass(frozen=True)
class Counted:
    """The counted checks the run made, and their rows (profile, workload, server and a column
    each) of the servers whose counts are ok; empty where the run counted nothing."""

    checks: tuple[CountedCheck, ...]
    rows: pd.DataFrame

    @classmethod
    def nothing(cls) -> Counted:
        """A run that counted nothing per request."""
        return cls((), pd.DataFrame(columns=KEY_COLUMNS))


def _config_value(config: Mapping, dotted: str):
    return functools.reduce(lambda found, key: found[key], dotted.split("."), config)


def counted_rows(checks: Iterable[Mapping], paths, config: Mapping) -> Counted:
    """The offered checks counted per request (those declaring a margin, a column of their table)
    whose tables are among ``paths``, read as ``Counted``."""
    made = {Path(path).name: Path(path) for path in paths}
    wanted = [c for c in checks if c.get("margin_key") and c["layout"] == Layout.COLUMN and c["table"] in made]
    if not wanted:
        return Counted.nothing()
    tables = []
    for table, group in itertools.groupby(sorted(wanted, key=lambda c: c["table"]), key=lambda c: c["table"]):
        found = pd.read_csv(made[table])
        columns = [c["name"] for c in group]
        tables.append(found[found["status"] == Status.OK][[*KEY_COLUMNS, *columns]].set_index(KEY_COLUMNS))
    rows = pd.concat(tables, axis=1).reset_index()
    margins = tuple(CountedCheck(c["name"], float(_config_value(config, c["margin_key"]))) for c in wanted)
    return Counted(margins, rows)
