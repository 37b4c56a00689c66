"""Releases: the page's section (per server, a row per release, a column per check, each
against the baseline release and a mark where it changed from the release before), its
sentences in answers.md and the console's lines, from releases.csv and release_verdicts.csv."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.decide.releases import BASELINE, PREVIOUS, neighbour_changes
from serverbench.record.vocabulary import DECIDED, Outcome, Status
from serverbench.tables.releases import CHECK_ORDER

CHECK_TITLES = {
    "installed": "installed",
    "instructions_per_request": "instructions / request",
    "syscalls_per_request": "syscalls / request",
    "cold_start_s": "cold start",
    "idle_uss_mb": "idle USS",
    "loaded_uss_mb": "loaded USS",
    "reload_failed": "failed / reload",
    "reload_longest_gap_s": "longest gap / reload",
    "conformance_met": "conformance met",
}
# How a change from the release before reads in a sentence, by check.
CHANGE_WORDS = {
    "instructions_per_request": "instructions per request",
    "cold_start_s": "cold start",
    "idle_uss_mb": "private memory when idle",
    "loaded_uss_mb": "private memory under load",
    "reload_failed": "failed requests per graceful reload",
    "reload_longest_gap_s": "longest time without an answer in a reload",
    "conformance_met": "conformance checks met",
}
CHANGE_MARK = "▲"  # the release changed this check from the one before it (decided)


def _figure(row) -> str:
    """One figure as the table shows it: value and unit, or the status and reason."""
    if row["status"] != Status.OK:
        return f"{row['status']}: {row['reason']}" if isinstance(row.get("reason"), str) else str(row["status"])
    value, unit = row["value"], row.get("unit")
    if pd.isna(value):
        return "–"
    if row["check"] == "installed":
        return f"yes ({value:.0f} s)"
    if row["check"] == "conformance_met":
        return f"{value:.0f} {unit}"
    if row["check"] == "instructions_per_request":
        return f"{value:,.0f}"
    return f"{value:.3g} {unit if isinstance(unit, str) else ''}".strip()


def _against(verdicts: pd.DataFrame, release: str, check: str, relation: str) -> pd.Series | None:
    found = verdicts[(verdicts["release"] == release) & (verdicts["check"] == check)]
    found = found[found["relation"] == relation]
    return found.iloc[0] if len(found) else None


def _cell(figure_row, verdicts: pd.DataFrame) -> dict:
    """A table cell: the figure, its outcome against the baseline, and whether it changed from
    the release before."""
    text = _figure(figure_row)
    against = _against(verdicts, figure_row["release"], figure_row["check"], BASELINE)
    if against is not None and isinstance(against["outcome"], str) and against["outcome"]:
        text += f" ({against['outcome']})"
    step = _against(verdicts, figure_row["release"], figure_row["check"], PREVIOUS)
    changed = step is not None and step["outcome"] in {*DECIDED, Outcome.CHANGED}
    return {"text": f"{CHANGE_MARK} {text}" if changed else text, "changed": changed}


def _amount(row) -> str:
    """How much, and how sure: the estimate with its interval, or the checks that changed."""
    if row["check"] == "conformance_met":
        return str(row["why"])
    if row["scale"] == "difference":
        return f"{row['estimate']:+.2f} {row['unit']} (95% interval {row['ci_low']:+.2f} to {row['ci_high']:+.2f})"
    share = f"{row['estimate']:.4f}×" if row["check"] == "instructions_per_request" else f"{row['estimate']:.2f}×"
    low, high = (f"{row[k]:.4f}" for k in ("ci_low", "ci_high"))
    return f"{share} the release before (95% interval {low}–{high})"


def change_sentence(row) -> str:
    """The first release that changed a check: which release, which check, by how much, how sure."""
    check = CHANGE_WORDS.get(row["check"], row["check"])
    before = row["against"].rsplit("@", 1)[-1]
    figures = ""
    if row["check"] != "conformance_met" and not pd.isna(row["a_value"]):
        figures = f"; {row['a_value']:.4g} against {row['b_value']:.4g}"
    return f"{row['server']} {row['version']} against {before}: {check} {row['outcome']}: {_amount(row)}{figures}."


def releases_context(table_csv, verdicts_csv) -> dict | None:
    table, verdicts = pd.read_csv(table_csv), pd.read_csv(verdicts_csv)
    if table.empty:
        return None
    servers = []
    for (profile, server), rows in table.groupby(["profile", "server"], sort=True):
        mine = verdicts[(verdicts["profile"] == profile) & (verdicts["server"] == server)]
        checks = [check for check in CHECK_ORDER if check in set(rows["check"])]
        lines = []
        for release, figures in rows.groupby("release", sort=False):
            by_check = {row["check"]: _cell(row, mine) for _, row in figures.iterrows()}
            version = figures.iloc[0]["version"]
            is_baseline = release in set(mine[mine["relation"] == BASELINE]["against"])
            lines.append({"version": f"{version} (baseline)" if is_baseline else str(version), "cells": by_check})
        servers.append({"server": server, "profile": profile, "checks": checks,
                        "titles": [CHECK_TITLES.get(c, c) for c in checks], "lines": lines})  # fmt: skip
    changes = [change_sentence(row) for _, row in neighbour_changes(verdicts).iterrows()]
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


def print_releases(verdicts_csv) -> None:
    """The console's lines at the end of a run that measured releases."""
    path = Path(verdicts_csv)
    if not path.exists() or path.stat().st_size == 0:
        return
    verdicts = pd.read_csv(path)
    print("\nReleases: what each release changed from the release before it")
    changes = neighbour_changes(verdicts)
    for _, row in changes.iterrows():
        print(f"  - {change_sentence(row)}")
    if changes.empty:
        print("  - none: every release measured alike")
