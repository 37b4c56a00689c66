"""releases.csv: every release of a run (``plan.releases``), one row per (profile, release,
check), its figure from the lens that measured it:

- ``installed``: the install's status (and pip's reason where it could not), its seconds;
- ``instructions_per_request``, ``syscalls_per_request``: the work lens (work.csv);
- ``cold_start_s``, ``idle_uss_mb``, ``loaded_uss_mb``, ``reload_failed``,
  ``reload_longest_gap_s``: a server in operation (operations.csv), its interval beside;
- ``conformance_met``: the conformance and framing checks it met, of those that rest on a
  requirement (conformance.csv).

A check a lens could not make is a row with its status and reason, never a missing row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from serverbench.record.conformance import met
from serverbench.record.vocabulary import Status

RELEASE_COLUMNS = ["profile", "server", "release", "version", "check", "value", "unit", "ci_low", "ci_high",
                   "status", "reason"]  # fmt: skip
WORK_CHECKS = {"instructions_per_request": "instructions", "syscalls_per_request": "syscalls"}
# Of the work lens's checks, the one a release is judged on (decide.releases): instructions.
WORK_CHECK = "instructions_per_request"
OPERATIONS_CHECKS = ("cold_start_s", "idle_uss_mb", "loaded_uss_mb", "reload_failed", "reload_longest_gap_s")
# The checks in the order the page's columns show them.
CHECK_ORDER = ("installed", *WORK_CHECKS, *OPERATIONS_CHECKS, "conformance_met")


def read_installs(paths) -> dict[tuple[str, str], dict]:
    """The install records (``host.releases.InstallRecord``), by (package, version)."""
    records = [json.loads(Path(path).read_text()) for path in paths]
    return {(record["package"], record["version"]): record for record in records}


def _row(profile: str, release: dict, name: str, check: str, **figures) -> dict:
    return {"profile": profile, "server": release["of"], "release": name, "version": release["version"],
            "check": check, "status": Status.OK.value, **figures}  # fmt: skip


def _install_row(profile: str, name: str, release: dict, installs: dict) -> dict:
    record = installs.get((release["package"], release["version"]))
    if record is None:
        return _row(profile, release, name, "installed", status="not measured", reason="no install record")
    return _row(profile, release, name, "installed", value=record.get("seconds"), unit="s",
                status=record["status"], reason=record.get("reason"))  # fmt: skip


def _work_rows(profile: str, name: str, release: dict, work: pd.DataFrame | None) -> list[dict]:
    rows = []
    found = work[(work["profile"] == profile) & (work["server"] == name)] if work is not None else pd.DataFrame()
    for check, unit in WORK_CHECKS.items():
        if found.empty:
            rows.append(_row(profile, release, name, check, status="not measured", reason="no work record"))
            continue
        first = found.iloc[0]
        status = first["status"]
        reason = None if status == Status.OK else first.get("reason")
        rows.append(
            _row(profile, release, name, check, value=first.get(check), unit=unit, status=status, reason=reason)
        )
    return rows


def _operations_rows(profile: str, name: str, release: dict, operations: pd.DataFrame | None) -> list[dict]:
    rows = []
    for check in OPERATIONS_CHECKS:
        found = pd.DataFrame()
        if operations is not None:
            found = operations[(operations["profile"] == profile) & (operations["server"] == name)]
            found = found[found["check"] == check]
        if found.empty:
            rows.append(_row(profile, release, name, check, status="not measured", reason="no operations figure"))
            continue
        first = found.iloc[0]
        figures = {key: first.get(key) for key in ("value", "unit", "ci_low", "ci_high", "status", "reason")}
        rows.append(_row(profile, release, name, check, **figures))
    return rows


def _conformance_row(profile: str, name: str, release: dict, conformance: pd.DataFrame | None) -> dict:
    found = pd.DataFrame()
    if conformance is not None:
        found = conformance[(conformance["profile"] == profile) & (conformance["server"] == name)]
    required = found[found["requirement"].fillna("").astype(str) != ""] if not found.empty else found
    if required.empty:
        return _row(profile, release, name, "conformance_met", status="not measured", reason="no conformance checks")
    kept = int(required["outcome"].map(met).astype(bool).sum())
    return _row(profile, release, name, "conformance_met", value=kept, unit=f"of {len(required)} checks")


def releases_table(config: dict, installs: dict, work=None, operations=None, conformance=None) -> pd.DataFrame:
    """releases.csv from the run's tables (each None where the run has none)."""
    rows = []
    catalogue = config["catalogue"]
    profiles = [p for p in (work, operations, conformance) if p is not None and not p.empty]
    present = sorted({(r.profile, r.server) for table in profiles for r in table[["profile", "server"]].itertuples()})
    by_profile: dict[str, list[str]] = {}
    for profile, server in present:
        if catalogue.get(server, {}).get("release"):
            by_profile.setdefault(profile, []).append(server)
    for profile, names in sorted(by_profile.items()):
        for name in names:
            release = catalogue[name]["release"]
            rows.append(_install_row(profile, name, release, installs))
            rows += _work_rows(profile, name, release, work)
            rows += _operations_rows(profile, name, release, operations)
            rows.append(_conformance_row(profile, name, release, conformance))
    return pd.DataFrame(rows, columns=RELEASE_COLUMNS)


def read_optional(path) -> pd.DataFrame | None:
    """A table of the run, None where the run made none (or it is empty)."""
    if not path or not Path(path).is_file() or Path(path).stat().st_size == 0:
        return None
    table = pd.read_csv(path)
    return table if not table.empty else None
