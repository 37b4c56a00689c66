"""Releases: the page's section (per server, a row per release, a column per check, each
against the baseline release and a mark where it changed from the release before), its
sentences in answers.md and the console's lines, from releases.csv and release_verdicts.csv."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from serverbench.lens import Check
from serverbench.lenses.releases.decide import BASELINE, PREVIOUS, neighbour_changes
from serverbench.lenses.releases.table import CONFORMANCE_CHECK, INSTALLED, check_order
from serverbench.record.vocabulary import DECIDED, Outcome, Status

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


def _cell(figure_row, verdicts: pd.DataFrame, checks: Mapping[str, Check]) -> dict:
    """A table cell: the figure, its outcome against the baseline, and whether it changed from
    the release before."""
    text = _figure(figure_row, checks)
    against = _against(verdicts, figure_row["release"], figure_row["check"], BASELINE)
    if against is not None and isinstance(against["outcome"], str) and against["outcome"]:
        text += f" ({against['outcome']})"
    step = _against(verdicts, figure_row["release"], figure_row["check"], PREVIOUS)
    changed = step is not None and step["outcome"] in {*DECIDED, Outcome.CHANGED}
    return {"text": f"{CHANGE_MARK} {text}" if changed else text, "changed": changed}


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


def releases_context(table_csv, verdicts_csv, checks: Sequence[Check]) -> dict | None:
    """The section from releases.csv and release_verdicts.csv, the checks as the lenses offer them."""
    table, verdicts = pd.read_csv(table_csv), pd.read_csv(verdicts_csv)
    known = _by_name(checks)
    titles = {**OWN_TITLES, **{check.name: check.title for check in checks}}
    if table.empty:
        return None
    servers = []
    for (profile, server), rows in table.groupby(["profile", "server"], sort=True):
        mine = verdicts[(verdicts["profile"] == profile) & (verdicts["server"] == server)]
        shown = [check for check in check_order(checks) if check in set(rows["check"])]
        lines = []
        for release, figures in rows.groupby("release", sort=False):
            by_check = {row["check"]: _cell(row, mine, known) for _, row in figures.iterrows()}
            version = figures.iloc[0]["version"]
            is_baseline = release in set(mine[mine["relation"] == BASELINE]["against"])
            lines.append({"version": f"{version} (baseline)" if is_baseline else str(version), "cells": by_check})
        servers.append(
            {
                "server": server,
                "profile": profile,
                "checks": shown,
                "titles": [titles.get(c, c) for c in shown],
                "lines": lines,
            }
        )
    changes = [change_sentence(row, checks) for _, row in neighbour_changes(verdicts).iterrows()]
    return {"servers": servers, "changes": changes}


def releases_markdown(context: dict) -> str:
    lines = ["## Releases", ""]
    for server in context["servers"]:
        lines += [f"### {server['server']}", "", "| version | " + " | ".join(server["titles"]) + " |"]
        lines.append("|" + " --- |" * (len(server["titles"]) + 1))
        for line in server["lines"]:
            cells = [line["cells"].get(check, {}).get("text", "–") for check in server["checks"]]
            lines.append(f"| {line['version']} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["What each release changed from the release before it:", ""]
    lines += [f"- {text}" for text in context["changes"]] or ["- none: every release measured alike"]
    return "\n".join(lines) + "\n\n"


def print_releases(verdicts_csv, checks: Sequence[Check]) -> None:
    """The console's lines at the end of a run that measured releases."""
    path = Path(verdicts_csv)
    if not path.exists() or path.stat().st_size == 0:
        return
    verdicts = pd.read_csv(path)
    print("\nReleases: what each release changed from the release before it")
    changes = neighbour_changes(verdicts)
    for _, row in changes.iterrows():
        print(f"  - {change_sentence(row, checks)}")
    if changes.empty:
        print("  - none: every release measured alike")
