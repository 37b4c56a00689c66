"""Releases: its section (per server, a row per release, a column per check, each against the
baseline release and a mark where it changed from the release before, then what each release
changed in a sentence), from releases.csv and release_verdicts.csv."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from serverbench.lens import WRITTEN, Cell, Check, Group, Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.releases.decide import BASELINE, PREVIOUS, neighbour_changes
from serverbench.lenses.releases.record import ReleaseOutcome
from serverbench.lenses.releases.table import CONFORMANCE_CHECK, INSTALLED, check_order
from serverbench.record.vocabulary import DECIDED, Status

# The titles and change words of the checks this lens makes itself; the others' come with them.
OWN_TITLES = {INSTALLED: "installed", CONFORMANCE_CHECK: "conformance met"}
CONFORMANCE_CHANGE = "conformance checks met"
CHANGE_MARK = "▲"  # the release changed this check from the one before it (decided)


def _by_name(checks: Sequence[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def _figure(row, checks: Mapping[str, Check]) -> str:
    """One figure as the table shows it: value and unit, or the status and reason."""
    if row["status"] != Status.OK:
        return f"{row['status']}: {row['reason']}" if isinstance(row.get("reason"), str) else str(row["status"])
    value, unit = row["value"], row.get("unit")
    if pd.isna(value):
        return "–"
    if row["check"] == INSTALLED:
        return f"yes ({value:.0f} s)"
    if row["check"] == CONFORMANCE_CHECK:
        return f"{value:.0f} {unit}"
    shape = checks[row["check"]].figure if row["check"] in checks else Check.figure
    return shape.format(value=value, unit=unit if isinstance(unit, str) else "").strip()


def _against(verdicts: pd.DataFrame, release: str, check: str, relation: str) -> pd.Series | None:
    found = verdicts[(verdicts["release"] == release) & (verdicts["check"] == check)]
    found = found[found["relation"] == relation]
    return found.iloc[0] if len(found) else None


def _cell(figure_row, verdicts: pd.DataFrame, checks: Mapping[str, Check]) -> Cell:
    """A table cell: the figure, its outcome against the baseline, and whether it changed from
    the release before."""
    text = _figure(figure_row, checks)
    against = _against(verdicts, figure_row["release"], figure_row["check"], BASELINE)
    if against is not None and isinstance(against["outcome"], str) and against["outcome"]:
        text += f" ({against['outcome']})"
    step = _against(verdicts, figure_row["release"], figure_row["check"], PREVIOUS)
    changed = step is not None and step["outcome"] in {*DECIDED, ReleaseOutcome.CHANGED}
    return Cell(f"{CHANGE_MARK} {text}" if changed else text, "changed" if changed else "")


def _amount(row, checks: Mapping[str, Check]) -> str:
    """How much, and how sure: the estimate with its interval, or the checks that changed."""
    if row["check"] == CONFORMANCE_CHECK:
        return str(row["why"])
    if row["scale"] == "difference":
        return f"{row['estimate']:+.2f} {row['unit']} (95% interval {row['ci_low']:+.2f} to {row['ci_high']:+.2f})"
    digits = checks[row["check"]].ratio_digits if row["check"] in checks else Check.ratio_digits
    share = f"{row['estimate']:.{digits}f}×"
    low, high = (f"{row[k]:.4f}" for k in ("ci_low", "ci_high"))
    return f"{share} the release before (95% interval {low}–{high})"


def change_sentence(row, checks: Sequence[Check]) -> str:
    """The first release that changed a check: which release, which check, by how much, how sure."""
    known = _by_name(checks)
    words = {CONFORMANCE_CHECK: CONFORMANCE_CHANGE, **{name: c.change for name, c in known.items() if c.change}}
    check = words.get(row["check"], row["check"])
    before = row["against"].rsplit("@", 1)[-1]
    figures = ""
    if row["check"] != CONFORMANCE_CHECK and not pd.isna(row["a_value"]):
        figures = f"; {row['a_value']:.4g} against {row['b_value']:.4g}"
    amount = _amount(row, known)
    return f"{row['server']} {row['version']} against {before}: {check} {row['outcome']}: {amount}{figures}."


TITLE = "Releases"
CHANGES = "What each release changed from the release before it"
NO_CHANGE = "none: every release measured alike"


def _server_table(rows: pd.DataFrame, mine: pd.DataFrame, checks: Sequence[Check], titles: Mapping) -> Table:
    """One server's table: a row per release, a column per check it has a figure for."""
    known = _by_name(checks)
    shown = [check for check in check_order(checks) if check in set(rows["check"])]
    baselines = set(mine[mine["relation"] == BASELINE]["against"])
    lines = []
    for release, figures in rows.groupby("release", sort=False):
        by_check = {row["check"]: _cell(row, mine, known) for _, row in figures.iterrows()}
        version = figures.iloc[0]["version"]
        cells = [by_check.get(check, Cell("–")) for check in shown]
        lines.append([f"{version} (baseline)" if release in baselines else str(version), *cells])
    return Table(["version", *(titles.get(c, c) for c in shown)], lines)


def releases_section(table_csv, verdicts_csv, checks: Sequence[Check]) -> Section | None:
    """The section from releases.csv and release_verdicts.csv, the checks as the lenses offer them."""
    table, verdicts = pd.read_csv(table_csv), pd.read_csv(verdicts_csv)
    titles = {**OWN_TITLES, **{check.name: check.title for check in checks}}
    if table.empty:
        return None
    servers = []
    for (profile, server), rows in table.groupby(["profile", "server"], sort=True):
        mine = verdicts[(verdicts["profile"] == profile) & (verdicts["server"] == server)]
        servers.append(Group(server, (_server_table(rows, mine, checks, titles),), WRITTEN))
    changes = [change_sentence(row, checks) for _, row in neighbour_changes(verdicts).iterrows()]
    return Section(
        TITLE,
        (
            Paragraph(f"{TITLE}: {CHANGES[0].lower()}{CHANGES[1:]}", Medium.CONSOLE),
            Paragraph(
                (
                    "Each release of a server installed side by side (a prefix of its own) and measured in one run: "
                    "work per request, a server in operation, the conformance and framing probes. In parentheses, "
                    "each figure against the baseline release (the newest, unless config names one); "
                    f"{CHANGE_MARK} marks a check the release changed from the release before it (",
                    Link("release_verdicts.csv"),
                    ", every figure in ",
                    Link("releases.csv"),
                    ").",
                ),
                Medium.PAGE,
            ),
            *servers,
            Paragraph(f"{CHANGES}:"),
            Sentences(changes or [NO_CHANGE]),
        ),
    )
