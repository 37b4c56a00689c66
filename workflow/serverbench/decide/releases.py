"""release_verdicts.csv: each release against the baseline release and against the release
before it, check by check, by the rule of the lens that measured the check: the work lens's
(``decide.work``: instructions per request against its margin), a server in operation's
(``decide.operations``: a bootstrap interval against each check's margin), both the
question *two things measured in one run* (``decide.margins``); conformance by its checks
met, the same or changed. These are the pairs ``decide.pairs`` declares (kinds ``release``
and ``release step``), read back from the lenses' verdict tables, turned round where the
table holds the pair the other way (a ratio inverted, a difference negated, the outcome
turned). ``neighbour_changes`` lists every release's decided change from the one before
it: the changes a maintainer would be told of.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from serverbench.decide.margins import Scale
from serverbench.plan.releases import baseline_of, versions_of
from serverbench.record.conformance import met
from serverbench.record.vocabulary import DECIDED, Kind, Outcome
from serverbench.tables.releases import OPERATIONS_CHECKS, WORK_CHECK, read_installs, read_optional, releases_table

BASELINE, PREVIOUS = "baseline", "previous"  # what a release is compared with
VERDICT_COLUMNS = ["profile", "server", "release", "version", "against", "relation", "check", "unit", "scale",
                   "a_value", "b_value", "estimate", "ci_low", "ci_high", "margin", "outcome", "why"]  # fmt: skip
TURNED = {
    Outcome.MORE_WORK: Outcome.LESS_WORK,
    Outcome.LESS_WORK: Outcome.MORE_WORK,
    Outcome.HIGHER: Outcome.LOWER,
    Outcome.LOWER: Outcome.HIGHER,
}
CONFORMANCE_CHECK = "conformance_met"
CHANGED = {*DECIDED, Outcome.CHANGED}


@dataclass(frozen=True)
class Tables:
    """The run's tables a release is judged from (each None where the run made none)."""

    work_verdicts: pd.DataFrame | None = None
    operations_verdicts: pd.DataFrame | None = None
    conformance: pd.DataFrame | None = None


def _pair_rows(table: pd.DataFrame | None, profile: str, a: str, b: str) -> tuple[pd.DataFrame, bool]:
    """The table's rows of the pair (a, b) of a release kind, and whether they hold it as (b, a)."""
    if table is None:
        return pd.DataFrame(), False
    kinds = table["kind"].isin([Kind.RELEASE, Kind.RELEASE_STEP]) & (table["profile"] == profile)
    forward = table[kinds & (table["a"] == a) & (table["b"] == b)]
    if not forward.empty:
        return forward, False
    return table[kinds & (table["a"] == b) & (table["b"] == a)], True


def _turned(row: dict, difference: bool) -> dict:
    """A comparison row of (b, a) read as (a, b)."""
    out = {**row, "a_value": row["b_value"], "b_value": row["a_value"]}
    out["outcome"] = TURNED.get(Outcome(row["outcome"]), row["outcome"]) if row["outcome"] else row["outcome"]
    value, low, high = row["estimate"], row["ci_low"], row["ci_high"]
    if difference:
        out["estimate"], out["ci_low"], out["ci_high"] = -value, -high, -low
    else:
        inverse = [1 / v if v and not pd.isna(v) else math.nan for v in (value, high, low)]
        out["estimate"], out["ci_low"], out["ci_high"] = inverse
    return out


def _work(tables: Tables, profile: str, a: str, b: str) -> dict | None:
    rows, turned = _pair_rows(tables.work_verdicts, profile, a, b)
    if rows.empty:
        return None
    first = rows.iloc[0]
    row = {"check": WORK_CHECK, "unit": "instructions", "scale": "ratio", "a_value": first["a_value"],
           "b_value": first["b_value"], "estimate": first["ratio"], "ci_low": first["ci_low"],
           "ci_high": first["ci_high"], "margin": first["margin"], "outcome": first["outcome"],
           "why": first.get("why")}  # fmt: skip
    return _turned(row, difference=False) if turned else row


def _operations(tables: Tables, profile: str, a: str, b: str) -> list[dict]:
    rows, turned = _pair_rows(tables.operations_verdicts, profile, a, b)
    found = []
    for _, first in rows.iterrows():
        if first["check"] not in OPERATIONS_CHECKS:
            continue
        row = {key: first.get(key) for key in ("check", "unit", "scale", "a_value", "b_value", "estimate", "ci_low",
                                                "ci_high", "margin", "outcome", "why")}  # fmt: skip
        found.append(_turned(row, difference=first["scale"] == Scale.DIFFERENCE.value) if turned else row)
    return found


def _met(conformance: pd.DataFrame, profile: str, server: str) -> dict[str, bool]:
    rows = conformance[(conformance["profile"] == profile) & (conformance["server"] == server)]
    rows = rows[rows["requirement"].fillna("").astype(str) != ""]
    return {row.check: bool(met(row.outcome)) for row in rows.itertuples()}


def _conformance(tables: Tables, profile: str, a: str, b: str) -> dict | None:
    """The checks one release met and the other did not (each a check resting on a requirement)."""
    if tables.conformance is None:
        return None
    met_a, met_b = _met(tables.conformance, profile, a), _met(tables.conformance, profile, b)
    if not met_a or not met_b:
        return None
    changed = sorted(check for check in set(met_a) & set(met_b) if met_a[check] != met_b[check])
    now = [check for check in changed if met_a[check]]
    lost = [check for check in changed if not met_a[check]]
    words = ([f"now met: {', '.join(now)}"] if now else []) + ([f"no longer met: {', '.join(lost)}"] if lost else [])
    return {"check": CONFORMANCE_CHECK, "unit": "checks met", "scale": "count", "a_value": sum(met_a.values()),
            "b_value": sum(met_b.values()), "estimate": sum(met_a.values()) - sum(met_b.values()),
            "outcome": Outcome.CHANGED if changed else Outcome.SAME, "why": "; ".join(words) or None}  # fmt: skip


def judge_pair(tables: Tables, profile: str, a: str, b: str) -> list[dict]:
    """Every check of release ``a`` against ``b`` the run's tables hold."""
    found = [_work(tables, profile, a, b), *_operations(tables, profile, a, b), _conformance(tables, profile, a, b)]
    return [row for row in found if row is not None]


def release_verdicts(config: dict, tables: Tables, servers_by_profile: dict[str, list[str]]) -> pd.DataFrame:
    """release_verdicts.csv: each release of each profile against its baseline and its predecessor
    (``servers_by_profile``: the releases installed, the baseline the newest of them)."""
    rows = []
    for profile, servers in sorted(servers_by_profile.items()):
        for server, names in versions_of(config, servers).items():
            baseline = baseline_of(config, names)
            for index, name in enumerate(names):
                against = [(BASELINE, baseline)] if name != baseline else []
                against += [(PREVIOUS, names[index - 1])] if index else []
                for relation, other in against:
                    version = config["catalogue"][name]["release"]["version"]
                    where = {"profile": profile, "server": server, "release": name, "version": version,
                             "against": other, "relation": relation}  # fmt: skip
                    rows += [{**where, **row} for row in judge_pair(tables, profile, name, other)]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def installed_releases(table: pd.DataFrame) -> dict[str, list[str]]:
    """Each profile's releases that were installed (releases.csv): one that could not be is in the
    table with its reason, compared with none."""
    installed = table[(table["check"] == "installed") & (table["status"] == "ok")]
    return {profile: sorted(set(rows["release"])) for profile, rows in installed.groupby("profile")}


def release_tables(config: dict, installs, lens_tables, conformance_csv) -> tuple[pd.DataFrame, pd.DataFrame]:
    """releases.csv and release_verdicts.csv from the install records and the tables of the
    lenses that offer checks (work's and operations', by file name) and conformance.csv."""
    found = {Path(path).name: path for path in lens_tables}
    work, operations = read_optional(found.get("work.csv")), read_optional(found.get("operations.csv"))
    conformance = read_optional(conformance_csv)
    table = releases_table(config, read_installs(installs), work, operations, conformance)
    judged = [read_optional(found.get(name)) for name in ("work_verdicts.csv", "operations_verdicts.csv")]
    return table, release_verdicts(config, Tables(*judged, conformance), installed_releases(table))


def neighbour_changes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Every decided change of a release from the release before it, with the figures (by
    server, then release oldest first, then check): what a maintainer would be told of."""
    return verdicts[(verdicts["relation"] == PREVIOUS) & verdicts["outcome"].isin(CHANGED)].reset_index(drop=True)
