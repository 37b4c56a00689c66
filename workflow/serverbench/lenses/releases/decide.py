"""release_verdicts.csv: each release against the baseline release and against the release
before it, check by check, by the rule of the lens that measured the check — the work lens's
(instructions per request against its margin), a server in operation's (a bootstrap interval
against each check's margin), both the question *two things measured in one run*
(``decide.margins``) —, read from the verdict table each check declares (``Check.verdicts``);
conformance by its checks met, the same or changed. These are the pairs ``decide.pairs``
declares (kinds ``release`` and ``release step``), turned round where the table holds the pair
the other way (a ratio inverted, a difference negated, the outcome turned).
``neighbour_changes`` lists every release's decided change from the one before it: the
changes a maintainer would be told of.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from serverbench.decide.margins import Scale
from serverbench.lens import Check
from serverbench.lenses.releases import BASELINE, CHANGED, PREVIOUS
from serverbench.lenses.releases.record import ReleaseOutcome
from serverbench.lenses.releases.table import CONFORMANCE_CHECK, INSTALLED, read_installs, read_optional, releases_table
from serverbench.plan.releases import baseline_of, versions_of
from serverbench.record.conformance import met
from serverbench.record.vocabulary import Kind, Outcome, Status

VERDICT_COLUMNS = [
    "profile",
    "server",
    "release",
    "version",
    "against",
    "relation",
    "check",
    "unit",
    "scale",
    "a_value",
    "b_value",
    "estimate",
    "ci_low",
    "ci_high",
    "margin",
    "outcome",
    "why",
]
TURNED = {
    Outcome.MORE_WORK: Outcome.LESS_WORK,
    Outcome.LESS_WORK: Outcome.MORE_WORK,
    Outcome.HIGHER: Outcome.LOWER,
    Outcome.LOWER: Outcome.HIGHER,
}


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


def _offered(check: Check, table: pd.DataFrame | None, profile: str, a: str, b: str) -> dict | None:
    """A check a lens offers, as its verdict table judged the pair."""
    rows, turned = _pair_rows(table, profile, a, b)
    if "check" in rows.columns:
        rows = rows[rows["check"] == check.name]
    if rows.empty:
        return None
    first = rows.iloc[0]
    row = {
        "check": check.name,
        "unit": first.get("unit", check.unit),
        "scale": first.get("scale", check.scale),
        "a_value": first["a_value"],
        "b_value": first["b_value"],
        "estimate": first[check.estimate],
        "ci_low": first["ci_low"],
        "ci_high": first["ci_high"],
        "margin": first["margin"],
        "outcome": first["outcome"],
        "why": first.get("why"),
    }
    return _turned(row, difference=row["scale"] == Scale.DIFFERENCE.value) if turned else row


def _met(conformance: pd.DataFrame, profile: str, server: str) -> dict[str, bool]:
    rows = conformance[(conformance["profile"] == profile) & (conformance["server"] == server)]
    rows = rows[rows["requirement"].fillna("").astype(str) != ""]
    return {row.check: bool(met(row.outcome)) for row in rows.itertuples()}


def _conformance(conformance: pd.DataFrame | None, profile: str, a: str, b: str) -> dict | None:
    """The checks one release met and the other did not (each a check resting on a requirement)."""
    if conformance is None:
        return None
    met_a, met_b = _met(conformance, profile, a), _met(conformance, profile, b)
    if not met_a or not met_b:
        return None
    changed = sorted(check for check in set(met_a) & set(met_b) if met_a[check] != met_b[check])
    now = [check for check in changed if met_a[check]]
    lost = [check for check in changed if not met_a[check]]
    words = ([f"now met: {', '.join(now)}"] if now else []) + ([f"no longer met: {', '.join(lost)}"] if lost else [])
    return {
        "check": CONFORMANCE_CHECK,
        "unit": "checks met",
        "scale": "count",
        "a_value": sum(met_a.values()),
        "b_value": sum(met_b.values()),
        "estimate": sum(met_a.values()) - sum(met_b.values()),
        "outcome": ReleaseOutcome.CHANGED if changed else ReleaseOutcome.SAME,
        "why": "; ".join(words) or None,
    }


@dataclass(frozen=True)
class Judged:
    """What a release is judged from: the checks judged, each lens's verdict tables (by file
    name, None where the run made none) and conformance.csv."""

    checks: Sequence[Check]
    verdicts: Mapping[str, pd.DataFrame | None]
    conformance: pd.DataFrame | None = None


def judge_pair(judged: Judged, profile: str, a: str, b: str) -> list[dict]:
    """Every check of release ``a`` against ``b`` the run's tables hold."""
    found = [_offered(check, judged.verdicts.get(check.verdicts), profile, a, b) for check in judged.checks]
    found.append(_conformance(judged.conformance, profile, a, b))
    return [row for row in found if row is not None]


def release_verdicts(config: Mapping, judged: Judged, servers_by_profile: dict[str, list[str]]) -> pd.DataFrame:
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
                    where = {
                        "profile": profile,
                        "server": server,
                        "release": name,
                        "version": version,
                        "against": other,
                        "relation": relation,
                    }
                    rows += [{**where, **row} for row in judge_pair(judged, profile, name, other)]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def installed_releases(table: pd.DataFrame) -> dict[str, list[str]]:
    """Each profile's releases that were installed (releases.csv): one that could not be is in the
    table with its reason, compared with none."""
    installed = table[(table["check"] == INSTALLED) & (table["status"] == Status.OK)]
    return {profile: sorted(set(rows["release"])) for profile, rows in installed.groupby("profile")}


def release_tables(
    config: Mapping, installs, checks: Sequence[Check], lens_tables, conformance_csv
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """releases.csv and release_verdicts.csv from the install records, the tables of the lenses
    that offer ``checks`` (their paths; each check names its own by file name) and conformance.csv."""
    found = {Path(path).name: read_optional(path) for path in lens_tables}
    conformance = read_optional(conformance_csv)
    table = releases_table(config, read_installs(installs), checks, found, conformance)
    judged = Judged([check for check in checks if check.judged], found, conformance)
    return table, release_verdicts(config, judged, installed_releases(table))


def neighbour_changes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Every decided change of a release from the release before it, with the figures (by
    server, then release oldest first, then check): what a maintainer would be told of."""
    return verdicts[(verdicts["relation"] == PREVIOUS) & verdicts["outcome"].isin(CHANGED)].reset_index(drop=True)
