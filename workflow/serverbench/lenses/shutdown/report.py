"""The page's "Does a deploy drop requests?": shutdown.csv read as a row per (server, stop, delay)
and the judged pairs in words, for the page, answers.md and the console. Small on purpose: the
page's section model is being changed (docs/architecture.md), this renders today's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.record.vocabulary import Outcome, Status

TITLE = "Does a deploy drop requests?"
# The page's columns: each from shutdown.csv, how it is written (a column no row has is left out).
COLUMNS = {
    "requests lost per stop": ("lost_per_stop", "{:.0f}"),
    "reset in the accept queue": ("reset_in_the_accept_queue", "{:.1f}"),
    "reset in flight": ("reset_in_flight", "{:.1f}"),
    "refused": ("refused", "{:.1f}"),
    "keep-alive closed": ("keep-alive_closed", "{:.1f}"),
    "timed out": ("timed_out", "{:.1f}"),
    "listener closed (s)": ("listener_closed_s", "{:.3f}"),
    "last answer (s)": ("last_answer_s", "{:.3f}"),
    "exited (s)": ("exited_s", "{:.3f}"),
    "exit code": ("exit_codes", "{}"),
    "long request": ("long_request", "{}"),
}


def _cell(value, form: str) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else form.format(value)


def shutdown_rows(table: pd.DataFrame) -> list[dict]:
    rows = []
    for _, found in table.iterrows():
        row = {"server": found["server"], "profile": found["profile"]}
        if found["status"] != Status.OK:
            row.update(stop="", notes=f"{found['status']}: {found['reason']}")
            rows.append(row)
            continue
        row["stop"] = f"{found['how']} ({found['signal']}), routed {found['delay_s']:g} s after"
        row.update({column: _cell(found[key], form) for column, (key, form) in COLUMNS.items()})
        killed = (
            f"killed after the lens's wait in {found['killed']:.0f} of {found['stops']:.0f}" if found["killed"] else ""
        )
        reason = found["reason"] if isinstance(found["reason"], str) else ""
        row["notes"] = "; ".join(part for part in (killed, reason) if part)
        rows.append(row)
    return rows


def _sentence(row: pd.Series) -> str:
    a, b = row["a"], row["b"]
    if row["outcome"] in (Outcome.UNDETERMINED, "undetermined"):
        why = row["why"] if isinstance(row["why"], str) else ""
        return f"{a} against {b}: requests lost per stop undetermined ({why})."
    figure = f"{row['estimate']:+.1f} [{row['ci_low']:+.1f}, {row['ci_high']:+.1f}] a stop"
    return f"{a} against {b}: requests lost per stop {row['outcome']}, {figure}."


def shutdown_context(shutdown_csv, verdicts_csv=None) -> dict | None:
    if not shutdown_csv:
        return None
    table = pd.read_csv(shutdown_csv)
    if table.empty:
        return None
    rows = shutdown_rows(table)
    every = ["server", "profile", "stop", *COLUMNS, "notes"]
    hidden = {"profile"} if table["profile"].nunique() == 1 else set()
    hidden |= {column for column in every if not any(row.get(column) for row in rows)}
    judged = pd.read_csv(verdicts_csv) if verdicts_csv and Path(verdicts_csv).stat().st_size else None
    sentences = [_sentence(row) for _, row in judged.iterrows()] if judged is not None and not judged.empty else []
    return {"columns": [c for c in every if c not in hidden], "rows": rows, "sentences": sentences}


def shutdown_markdown(context: dict) -> str:
    """answers.md's section: the page's table, as markdown."""
    columns = context["columns"]
    lines = [
        f"## {TITLE}",
        "",
        "Each server stopped under load as its catalogue declares, several times each way (shutdown.csv;"
        " docs/shutdown.md); requests per stop, seconds from the signal.",
        "",
        *(f"- {sentence}" for sentence in context["sentences"]),
        *([""] if context["sentences"] else []),
        "| " + " | ".join(columns) + " |",
        "| " + " | ".join("---" for _ in columns) + " |",
        *("| " + " | ".join(str(row.get(column, "")) for column in columns) + " |" for row in context["rows"]),
    ]
    return "\n".join([*lines, ""])


def shutdown_console(results: Path, inputs=None) -> None:
    """A line per server at the end of a run: requests lost per stop, each way it was stopped."""
    path = Path(results) / "shutdown.csv"
    if not path.is_file():
        return
    table = pd.read_csv(path)
    if table.empty:
        return
    print(f"{TITLE} (shutdown.csv)")
    for server, rows in table.groupby("server", sort=True):
        said = [
            f"{row['how']} {row['delay_s']:g} s: {row['lost_per_stop']:.0f} lost"
            if row["status"] == Status.OK
            else f"{row['status']}"
            for _, row in rows.iterrows()
        ]
        print(f"  {server}: " + "; ".join(said))
