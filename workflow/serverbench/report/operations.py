"""The page's "A server in operation": operations.csv read as one row per server, its
checks as columns (cold start, memory idle and per worker, what a reload cost),
each figure with its interval where the rounds give one and the reason where a
check could not be made."""

from __future__ import annotations

import pandas as pd

# The page's columns: the checks shown, in order, and how each figure is written.
COLUMNS = {
    "cold start (s)": ("cold_start_s", "{:.3f}"),
    "idle PSS (MB)": ("idle_pss_mb", "{:.1f}"),
    "PSS under load (MB)": ("loaded_pss_mb", "{:.1f}"),
    "USS per worker (MB)": ("uss_per_worker_mb", "{:.2f}"),
    "balance over workers (Jain)": ("balance_jain", "{:.2f}"),
    "failed per reload": ("reload_failed", "{:.0f}"),
    "dropped idle per reload": ("reload_dropped_reused", "{:.0f}"),
    "longest wait in a reload (s)": ("reload_longest_gap_s", "{:.3f}"),
    "without a reload (s)": ("control_longest_gap_s", "{:.3f}"),
    "answering after": ("reload_alive", "{:.0%}"),
}


def _figure(row: pd.Series | None, form: str) -> str:
    if row is None:
        return ""
    if row["status"] not in ("ok", "broken") or pd.isna(row["value"]):
        return str(row["status"])
    text = form.format(row["value"])
    if pd.notna(row.get("ci_low")) and pd.notna(row.get("ci_high")) and row["ci_low"] != row["ci_high"]:
        text += f" [{form.format(row['ci_low'])}–{form.format(row['ci_high'])}]"
    return text


def operations_rows(table: pd.DataFrame, titles: dict | None = None) -> list[dict]:
    """One row per (profile, server); the reasons of the checks not made, once each, in ``notes``."""
    rows = []
    for (profile, server), checks in table.groupby(["profile", "server"], sort=True):
        by_check = {row["check"]: row for _, row in checks.iterrows()}
        language = checks["language"].iloc[0]
        row = {"server": server, "language": (titles or {}).get(language, language), "profile": profile}
        for column, (check, form) in COLUMNS.items():
            row[column] = _figure(by_check.get(check), form)
        reasons = dict.fromkeys(
            str(r["reason"]) for r in by_check.values() if isinstance(r["reason"], str) and r["status"] != "ok"
        )
        row["notes"] = "; ".join(reasons)
        rows.append(row)
    return rows


def operations_context(operations_csv, titles: dict | None = None) -> dict | None:
    """The section's rows and columns (a profile named only where the run has several; notes
    only where a check could not be made)."""
    if not operations_csv:
        return None
    table = pd.read_csv(operations_csv)
    if table.empty:
        return None
    rows = operations_rows(table, titles)
    hidden = {"profile"} if table["profile"].nunique() == 1 else set()
    hidden |= {"notes"} if not any(row["notes"] for row in rows) else set()
    return {"columns": [column for column in rows[0] if column not in hidden], "rows": rows}


def operations_markdown(context: dict) -> str:
    """answers.md's "A server in operation": the page's table, as markdown."""
    columns = context["columns"]
    lines = [
        "## A server in operation",
        "",
        "Medians over the rounds, intervals where the rounds give one (operations.csv; docs/operations.md).",
        "",
        "| " + " | ".join(columns) + " |",
        "| " + " | ".join("---" for _ in columns) + " |",
        *("| " + " | ".join(str(row[column]) for column in columns) + " |" for row in context["rows"]),
    ]
    return "\n".join([*lines, ""])
