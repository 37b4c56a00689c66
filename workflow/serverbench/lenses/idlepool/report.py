"""Which balancer idle timeout is safe for this server? Its section, from idle_pool_answers.csv
(a sentence and a row per server and deployment) and idle_pool.csv (every idle time's reuses)."""

from __future__ import annotations

import pandas as pd

from serverbench.lens import Link, Medium, Paragraph, Section, Sentences, Table

TITLE = "Which balancer idle timeout is safe for this server?"
COLUMNS = ("server", "deployment", "keep-alive", "race window", "safe balancer idle timeout", "raised keep-alive",
           "idle connections that starve a fresh client")  # fmt: skip


def _seconds(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:g} s"


def sentence(row: pd.Series) -> str:
    """One deployment's answer, and the figures it rests on."""
    where = (
        row["server"]
        if row["deployment"] == row["server"]
        else f"{row['server']} behind {row['deployment'].split('+')[-1]}"
    )
    if row["status"] != "ok":
        return f"{where}: not swept ({row['reason']})."
    keepalive = f"its {row['keepalive_s']:g} s keep-alive ({row['keepalive_setting']})"
    window = row["race_window_s"] if isinstance(row["race_window_s"], str) else ""
    safe = _seconds(row["safe_idle_timeout_s"])
    if window:
        said = f"{where}: reuses fail at idle {window} s against {keepalive}; a balancer idle timeout is safe to {safe}"
    else:
        said = f"{where}: no reuse failed at any idle time swept around {keepalive} (safe up to {safe})"
    if not pd.isna(row["raised_closes_window"]):
        closes = "closes" if row["raised_closes_window"] in (True, "True") else "does not close"
        said += f"; raising it to {_seconds(row['raised_keepalive_s'])} {closes} the window"
    if not pd.isna(row["starved_beside"]):
        said += f"; {int(row['starved_beside'])} idle connections starve a fresh client"
    return said + "."


def _row(row: pd.Series) -> tuple[str, ...]:
    closes = row["raised_closes_window"]
    raised = (
        "–"
        if pd.isna(closes)
        else f"{_seconds(row['raised_keepalive_s'])}: {'closes' if closes in (True, 'True') else 'open'}"
    )
    window = row["race_window_s"] if isinstance(row["race_window_s"], str) and row["race_window_s"] else "none"
    starved = "–" if pd.isna(row["starved_beside"]) else str(int(row["starved_beside"]))
    return (row["server"], row["deployment"], _seconds(row["keepalive_s"]), window,
            _seconds(row["safe_idle_timeout_s"]), raised, starved)  # fmt: skip


def idle_pool_section(answers_csv, table_csv=None) -> Section | None:
    answers = pd.read_csv(answers_csv)
    if answers.empty:
        return None
    return Section(
        TITLE,
        (
            Paragraph(
                (
                    "Connections pooled as a balancer pools them: answered once, held idle, reused after each idle "
                    "time swept around the server's own keep-alive; a reuse reset or closed before its answer is a "
                    "502 at the balancer (one seen closed before the send is retried). Each idle time's failed "
                    "reuses judged against the shortest's by the one rule (",
                    Link("idle_pool_verdicts.csv"),
                    ", every reuse in ",
                    Link("idle_pool.csv"),
                    ").",
                ),
                Medium.PAGE,
            ),
            Paragraph(TITLE, Medium.CONSOLE),
            Table(COLUMNS, [_row(row) for _, row in answers.iterrows()], Medium.PAGE),
            Sentences([sentence(row) for _, row in answers.iterrows()]),
        ),
        anchor="idle-pool",
    )
