"""The section "Does a deploy drop requests?": shutdown.csv read as a row per (server, stop, delay,
placement, handover), the judged pairs in words, a sentence for each question of the stops behind
the front and the replacements (across the servers), and a console line per server (the core
writes the page, answers.md and the console from it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.lens import Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.shutdown.decide import WAY_WORDS
from serverbench.lenses.shutdown.words import Handover, How, Placement, ShutdownKind
from serverbench.record.vocabulary import Outcome, Status

TITLE = "Does a deploy drop requests?"
BAD_STATUS = "bad status"
# The page's columns: each from shutdown.csv, how it is written (a column no row has is left out).
COLUMNS = {
    "requests lost per stop": ("lost_per_stop", "{:.0f}"),
    BAD_STATUS: ("bad_status", "{:.1f}"),  # a 502 from the front whose upstream is gone, a 503
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
    "open loop (req/s)": ("open_rate", "{:.0f}"),
    "open loop lag (s)": ("open_lag_s", "{:.3f}"),
}


def _cell(value, form: str) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else form.format(value)


def way_words(found: pd.Series) -> str:
    """A row's placement and handover in words after its stop (bare and alone, or a table from
    before them: nothing)."""
    placement, handover = found.get("placement"), found.get("handover")
    if not isinstance(placement, str) or not isinstance(handover, str):
        return ""
    return WAY_WORDS[Placement(placement), Handover(handover)]


def stop_words(found: pd.Series) -> str:
    """How a row's stops were made, in words (a drain's signal comes its delay after its control requests)."""
    if found["how"] == How.DRAIN:
        return f"drain (stopped accepting, {found['signal']} {found['delay_s']:g} s later), routed until the signal"
    return f"{found['how']} ({found['signal']}), routed {found['delay_s']:g} s after{way_words(found)}"


def shutdown_rows(table: pd.DataFrame) -> list[dict]:
    rows = []
    for _, found in table.iterrows():
        row = {"server": found["server"], "profile": found["profile"]}
        if found["status"] != Status.OK:
            way = way_words(found)  # a way it could not be stopped: which, else nothing
            said = f"{found['how']}, routed {found['delay_s']:g} s after{way}" if way else ""
            row.update(stop=said, notes=f"{found['status']}: {found['reason']}")
            rows.append(row)
            continue
        row["stop"] = stop_words(found)
        row.update({column: _cell(found.get(key), form) for column, (key, form) in COLUMNS.items()})
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


PAGE_LEAD = (
    "Each server started afresh, loaded by closed-loop clients (kept-alive connections and a connection per "
    "request) and stopped as its catalogue declares: its graceful stop with the clients still sending for each "
    'delay (a balancer still routing to it), its fast one, and where it has its own "stop accepting" (Unit\'s '
    "listener removed), that first and its graceful signal after the delay (",
    Link("shutdown.csv"),
    "). Per stop, the requests lost by what they met — reset in the accept queue (connected at the kernel, never "
    "accepted), reset in flight, refused once the listener had closed, a kept-alive connection closed under them, "
    "timed out — and the seconds from the signal to the listener gone, the last answer and the exit. Medians over "
    "the stops.",
)
MARKDOWN_LEAD = (
    "Each server stopped under load as its catalogue declares, several times each way (shutdown.csv;"
    " docs/shutdown.md); requests per stop, seconds from the signal."
)
JUDGED_LEAD = (
    "Each server's stops judged against each other (",
    Link("shutdown_verdicts.csv"),
    "; a difference of the requests lost per stop with a 95% bootstrap interval, half a request a stop the margin):",
)


def console_lines(table: pd.DataFrame) -> list[str]:
    """A line per server: requests lost per stop, each way it was stopped."""
    lines = []
    for server, rows in table.groupby("server", sort=True):
        said = [
            f"{row['how']} {row['delay_s']:g} s{way_words(row)}: {row['lost_per_stop']:.0f} lost"
            if row["status"] == Status.OK
            else f"{row['status']}"
            for _, row in rows.iterrows()
        ]
        lines.append(f"{server}: " + "; ".join(said))
    return lines


# Each question of the stops behind the front and the replacements: its verdicts' kind, asked.
QUESTIONS = {
    ShutdownKind.FRONTED_STOP: "Stopped behind the nginx front against bare",
    ShutdownKind.REPLACEMENT: "Replaced through SO_REUSEPORT (a second instance on the port) against stopped alone",
    ShutdownKind.UPSTREAM_RETRY: (
        "Replaced as a second upstream of the front, the front retrying a failed request on the other "
        "(*_next_upstream error timeout) against not (off)"
    ),
}


def answers(judged: pd.DataFrame | None) -> list[str]:
    """A sentence for each question asked (``QUESTIONS``): every server's outcome on the requests
    lost per stop and its difference a stop, the servers that could not be judged with why."""
    if judged is None or judged.empty or "kind" not in judged:
        return []
    found = []
    for kind, question in QUESTIONS.items():
        rows = judged[judged["kind"] == kind]
        if rows.empty:
            continue
        said = []
        for _, row in rows.iterrows():
            if row["outcome"] in (Outcome.UNDETERMINED, "undetermined"):
                said.append(f"{row['server']} undetermined")
            else:
                said.append(f"{row['server']} {row['outcome']} ({row['estimate']:+.1f})")
        found.append(f"{question}, requests lost per stop: " + ", ".join(said) + ".")
    return found


def shutdown_section(shutdown_csv, verdicts_csv=None) -> Section | None:
    """A row per (server, stop, delay) (a profile named only where the run has several, a column
    only where a row has it), the judged pairs in words, and the console's line per server."""
    if not shutdown_csv:
        return None
    # The exit codes as written ("0 -9"): a server not measured leaves the column empty, which
    # would otherwise read it as floats ("0.0").
    table = pd.read_csv(shutdown_csv, dtype={"exit_codes": str})
    if table.empty:
        return None
    rows = shutdown_rows(table)
    every = ["server", "profile", "stop", *COLUMNS, "notes"]
    hidden = {"profile"} if table["profile"].nunique() == 1 else set()
    hidden |= {column for column in every if not any(row.get(column) for row in rows)}
    # A front's 502s are what a stop behind it loses: the column where a row stood behind one.
    if "placement" not in table or not (table["placement"] == Placement.FRONTED).any():
        hidden.add(BAD_STATUS)
    columns = [column for column in every if column not in hidden]
    judged = pd.read_csv(verdicts_csv) if verdicts_csv and Path(verdicts_csv).stat().st_size else None
    sentences = [_sentence(row) for _, row in judged.iterrows()] if judged is not None and not judged.empty else []
    answered = answers(judged)
    return Section(
        TITLE,
        (
            Paragraph(PAGE_LEAD, Medium.PAGE),
            Paragraph(MARKDOWN_LEAD, Medium.MARKDOWN),
            Paragraph(f"{TITLE} (shutdown.csv)", Medium.CONSOLE),
            # answers.md reads the outcomes before the table, the page after it.
            *((Sentences(answered, Medium.MARKDOWN),) if answered else ()),
            Sentences(sentences, Medium.MARKDOWN),
            Sentences(console_lines(table), Medium.CONSOLE, marker=""),
            *((Sentences(answered, Medium.CONSOLE, marker=""),) if answered else ()),
            Table(
                columns,
                [[str(row.get(column, "")) for column in columns] for row in rows],
                classes="sortable comparisons shutdown",
                labelled=True,
            ),
            *((Paragraph(JUDGED_LEAD, Medium.PAGE), Sentences(sentences, Medium.PAGE)) if sentences else ()),
            *((Sentences(answered, Medium.PAGE),) if answered else ()),
        ),
    )
