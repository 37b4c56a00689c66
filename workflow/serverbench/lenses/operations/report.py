"""The page's "A server in operation": operations.csv read as one row per server, its
checks as columns (cold start, memory idle and per worker, what a reload cost),
each figure with its interval where the rounds give one and the reason where a
check could not be made."""

from __future__ import annotations

import pandas as pd

from serverbench.lens import Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.operations.record import ReloadStatus
from serverbench.record.vocabulary import KIND_ORDER, Outcome, Status

# A scaling server's processes idle and at the peak of a step of load, written "2 → 6".
STEP_COLUMN = "processes idle → at a step's peak"
# The page's columns: the checks shown, in order, and how each figure is written (a column
# no server has a figure for is left out: the step's, where no server scales).
COLUMNS = {
    "cold start (s)": ("cold_start_s", "{:.3f}"),
    "idle PSS (MB)": ("idle_pss_mb", "{:.1f}"),
    "PSS under load (MB)": ("loaded_pss_mb", "{:.1f}"),
    "USS per worker (MB)": ("uss_per_worker_mb", "{:.2f}"),
    "balance over workers (Jain)": ("balance_jain", "{:.2f}"),
    STEP_COLUMN: ("step_processes_peak", "{:.0f}"),
    "back to idle after a step (s)": ("step_fall_s", "{:.1f}"),
    "failed per reload": ("reload_failed", "{:.0f}"),
    "dropped idle per reload": ("reload_dropped_reused", "{:.0f}"),
    "longest wait in a reload (s)": ("reload_longest_gap_s", "{:.3f}"),
    "without a reload (s)": ("control_longest_gap_s", "{:.3f}"),
    "answering after": ("reload_alive", "{:.0%}"),
}


def _figure(row: pd.Series | None, form: str) -> str:
    if row is None:
        return ""
    if row["status"] not in (Status.OK, ReloadStatus.BROKEN) or pd.isna(row["value"]):
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
        idle = by_check.get("step_processes_idle")
        if idle is not None and row[STEP_COLUMN] and idle["status"] == Status.OK:
            row[STEP_COLUMN] = f"{idle['value']:.0f} → {row[STEP_COLUMN]}"
        reasons = dict.fromkeys(
            str(r["reason"]) for r in by_check.values() if isinstance(r["reason"], str) and r["status"] != Status.OK
        )
        row["notes"] = "; ".join(reasons)
        rows.append(row)
    return rows


TITLE = "A server in operation"


def operations_section(operations_csv, verdicts_csv=None, titles: dict | None = None) -> Section | None:
    """The section: a row per server (a profile named only where the run has several; notes
    only where a check could not be made), and the declared pairs' outcomes in words."""
    if not operations_csv:
        return None
    table = pd.read_csv(operations_csv)
    if table.empty:
        return None
    rows = operations_rows(table, titles)
    hidden = {"profile"} if table["profile"].nunique() == 1 else set()
    hidden |= {column for column in rows[0] if not any(row[column] for row in rows)}
    columns = [column for column in rows[0] if column not in hidden]
    sentences = judged_sentences(pd.read_csv(verdicts_csv)) if verdicts_csv else []
    judged = [
        Paragraph(
            (
                "Each declared pair compared check by check (",
                Link("operations_verdicts.csv"),
                "; lower is better for each, a ratio of medians or a difference of failed requests, with a 95% "
                "bootstrap interval; five figures a side or more decide):",
            ),
            Medium.PAGE,
        ),
        Sentences(sentences, Medium.PAGE),
    ]
    return Section(
        TITLE,
        (
            Paragraph(
                (
                    "Each server started several times and reloaded under load (",
                    Link("operations.csv"),
                    "): the time from its start to its first correct answer; every process's proportional memory "
                    "once idle and under load, and what one more worker costs in memory private to it (the slope "
                    "over 1, 2 and 4 workers); how evenly its workers share the answers (Jain's index: 1 even, ½ one "
                    "of two workers answers all); and per graceful reload under a closed loop of connections, the "
                    "requests that failed, the idle keep-alive connections it dropped (a client may retry those), "
                    "and the longest time no correct answer came, against the same client without a reload. "
                    "Medians over the rounds, with their intervals where the rounds give one.",
                ),
                Medium.PAGE,
            ),
            Paragraph(
                "Medians over the rounds, intervals where the rounds give one (operations.csv; docs/operations.md).",
                Medium.MARKDOWN,
            ),
            # answers.md reads the outcomes before the table, the page after it.
            Sentences(sentences, Medium.MARKDOWN),
            Table(
                columns,
                [[str(row[column]) for column in columns] for row in rows],
                classes="sortable comparisons operations",
                labelled=True,
            ),
            *(judged if sentences else []),
        ),
    )


# How each judged check is named in a sentence (decide.operations.CHECKS).
CHECK_WORDS = {
    "cold_start_s": "cold start",
    "idle_uss_mb": "private memory (USS) idle",
    "loaded_uss_mb": "private memory (USS) under load",
    "reload_longest_gap_s": "longest wait in a reload",
    "reload_failed": "failed requests per reload",
}


def _ratio(value: float) -> str:
    """Two decimals, or two significant figures below 0.1 (a chain reload's wait is 0.0051×
    HUP's, not 0.00×)."""
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def _sentence(row: pd.Series) -> str:
    words, a, b = CHECK_WORDS.get(row["check"], row["check"]), row["a"], row["b"]
    if pd.isna(row["estimate"]):
        figure = "no estimate"
    elif row["scale"] == "difference":
        figure = f"{row['estimate']:+.1f} [{row['ci_low']:+.1f}, {row['ci_high']:+.1f}] a reload"
    else:
        figure = f"{_ratio(row['estimate'])}× [{_ratio(row['ci_low'])}–{_ratio(row['ci_high'])}]"
    if row["outcome"] == Outcome.EQUIVALENT:
        return f"{a} and {b} ({row['kind']}): {words} equivalent, {figure}."
    if row["outcome"] in ("lower", "higher"):
        return f"{a} ({row['kind']} of {b}): {words} {row['outcome']}, {figure}."
    why = row["why"] if isinstance(row["why"], str) and row["why"] else figure  # a CSV's empty cell reads as NaN
    return f"{a} against {b} ({row['kind']}): {words} undetermined ({why})."


def judged_sentences(judged: pd.DataFrame) -> list[str]:
    """Every decided comparison, and every control's whatever its outcome; how many were not."""
    if judged.empty:
        return []
    judged = judged.assign(order=judged["kind"].map(KIND_ORDER).fillna(len(KIND_ORDER)))
    judged = judged.sort_values(["order", "a", "b", "check"], kind="stable")
    shown = judged[(judged["outcome"] != Outcome.UNDETERMINED) | (judged["kind"] == "A/A")]
    sentences = [_sentence(row) for _, row in shown.iterrows()]
    left = len(judged) - len(shown)
    if left:
        sentences.append(f"{left} other comparisons undetermined (operations_verdicts.csv).")
    return sentences
