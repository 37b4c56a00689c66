"""releases.csv: every release of a run (``plan.releases``), one row per (profile, release,
check), its figure from the lens that measured it:

- ``installed``: the install's status (and pip's reason where it could not), its seconds;
- the checks the lenses offer (``Lens.checks``, each a ``lens.Check``): the work
  lens's instructions and syscalls per request (work.csv), a server in operation's cold
  start, memory and reload figures (operations.csv), each with its interval where it has one;
- ``conformance_met``: the conformance and framing checks it met, of those that rest on a
  requirement (conformance.csv, the core's).

A check a lens could not make is a row with its status and reason, never a missing row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from serverbench.lens import Check, Layout
from serverbench.lenses.releases import CONFORMANCE_CHECK, INSTALLED
from serverbench.record.conformance import met
from serverbench.record.vocabulary import Status

RELEASE_COLUMNS = [
    "profile",
    "server",
    "release",
    "version",
    "check",
    "value",
    "unit",
    "ci_low",
    "ci_high",
    "status",
    "reason",
]
ROW_FIGURES = ("value", "unit", "ci_low", "ci_high", "status", "reason")


def check_order(checks: Sequence[Check]) -> tuple[str, ...]:
    """The checks in the order the table and the page's columns show them."""
    return (INSTALLED, *(check.name for check in checks), CONFORMANCE_CHECK)


def read_installs(paths) -> dict[tuple[str, str], dict]:
    """The install records (``host.releases.InstallRecord``), by (package, version)."""
    records = [json.loads(Path(path).read_text()) for path in paths]
    return {(record["package"], record["version"]): record for record in records}


def _row(profile: str, release: dict, name: str, check: str, **figures) -> dict:
    return {
        "profile": profile,
        "server": release["of"],
        "release": name,
        "version": release["version"],
        "check": check,
        "status": Status.OK.value,
        **figures,
    }


def _install_row(profile: str, name: str, release: dict, installs: dict) -> dict:
    record = installs.get((release["package"], release["version"]))
    if record is None:
        return _row(profile, release, name, INSTALLED, status=Status.NOT_MEASURED, reason="no install record")
    return _row(
        profile,
        release,
        name,
        INSTALLED,
        value=record.get("seconds"),
        unit="s",
        status=record["status"],
        reason=record.get("reason"),
    )


def _offered_row(profile: str, name: str, release: dict, check: Check, table: pd.DataFrame | None) -> dict:
    """The check's figure for one release, from the table its lens declared."""
    found = pd.DataFrame()
    if table is not None:
        found = table[(table["profile"] == profile) & (table["server"] == name)]
        if check.layout == Layout.ROW:
            found = found[found["check"] == check.name]
    if found.empty:
        why = f"no {Path(check.table).stem.replace('_', ' ')} " + ("figure" if check.layout == Layout.ROW else "record")
        return _row(profile, release, name, check.name, status=Status.NOT_MEASURED, reason=why)
    first = found.iloc[0]
    if check.layout == Layout.ROW:
        return _row(profile, release, name, check.name, **{key: first.get(key) for key in ROW_FIGURES})
    status = first["status"]
    reason = None if status == Status.OK else first.get("reason")
    return _row(
        profile, release, name, check.name, value=first.get(check.name), unit=check.unit, status=status, reason=reason
    )


def _conformance_row(profile: str, name: str, release: dict, conformance: pd.DataFrame | None) -> dict:
    found = pd.DataFrame()
    if conformance is not None:
        found = conformance[(conformance["profile"] == profile) & (conformance["server"] == name)]
    required = found[found["requirement"].fillna("").astype(str) != ""] if not found.empty else found
    if required.empty:
        return _row(
            profile, release, name, CONFORMANCE_CHECK, status=Status.NOT_MEASURED, reason="no conformance checks"
        )
    kept = int(required["outcome"].map(met).astype(bool).sum())
    return _row(profile, release, name, CONFORMANCE_CHECK, value=kept, unit=f"of {len(required)} checks")


def releases_table(
    config: Mapping,
    installs: dict,
    checks: Sequence[Check],
    tables: Mapping[str, pd.DataFrame | None],
    conformance: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """releases.csv from the run's tables: the offering lenses' (``tables``, by file name, None
    where the run has none) and conformance.csv."""
    rows = []
    catalogue = config["catalogue"]
    present_tables = [t for t in (*(tables.get(c.table) for c in checks), conformance) if t is not None and not t.empty]
    present = sorted({(r.profile, r.server) for t in present_tables for r in t[["profile", "server"]].itertuples()})
    by_profile: dict[str, list[str]] = {}
    for profile, server in present:
        if catalogue.get(server, {}).get("release"):
            by_profile.setdefault(profile, []).append(server)
    for profile, names in sorted(by_profile.items()):
        for name in names:
            release = catalogue[name]["release"]
            rows.append(_install_row(profile, name, release, installs))
            rows += [_offered_row(profile, name, release, check, tables.get(check.table)) for check in checks]
            rows.append(_conformance_row(profile, name, release, conformance))
    return pd.DataFrame(rows, columns=RELEASE_COLUMNS)


def read_optional(path) -> pd.DataFrame | None:
    """A table of the run, None where the run made none (or it is empty)."""
    if not path or not Path(path).is_file() or Path(path).stat().st_size == 0:
        return None
    table = pd.read_csv(path)
    return table if not table.empty else None
