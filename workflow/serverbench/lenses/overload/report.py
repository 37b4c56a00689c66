"""The section "Past capacity: does it fall over?": the answer first (overload_verdicts.csv: which
server holds at 2× its capacity, which sheds, which collapses; which never recovered after the
burst; its own backlog against the set one), then overload.csv read as a row per (server,
backlog, client, stretch) and a console line per server, and last the hung request's sentence
and table (overload_hang.csv); the core writes the page, answers.md and the console from it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.lens import Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.overload.table import MET_COLUMNS
from serverbench.lenses.overload.words import NEVER_RECOVERED, GoodputClass, Met, OverloadKind, OverloadOutcome
from serverbench.record.vocabulary import Outcome, Status

TITLE = "Past capacity: does it fall over?"
PAGE_LEAD = (
    "Each server's capacity at the p99 objective found first, then offered open loop at multiples of it and a "
    "burst, at its own listen backlog and at the profile's (",
    Link("overload.csv"),
    "). Every request counted at the client by what it met; goodput is the answers within the objective per "
    "second; recovery the seconds after the burst until the offered rate is met again. Judged over the repeats of "
    "2× capacity (",
    Link("overload_verdicts.csv"),
    "): goodput as capacity's share, a 95% bootstrap interval read against the profile's shares.",
)
MARKDOWN_LEAD = "Each server past its capacity at the p99 objective (overload.csv; docs/overload.md)."


def _stretch(row: pd.Series) -> str:
    if row["phase"] == "burst":
        return "burst"
    repeat = row.get("repeat")
    return f"{row['multiple']:g}×" + (f" #{repeat + 1:.0f}" if repeat and not pd.isna(repeat) else "")


def _cell(value, form: str = "{}") -> str:
    return "" if value is None or pd.isna(value) else form.format(value)


def _sent(row: pd.Series) -> str:
    """Sent of the scheduled rate; the client's own limit said where it fell short."""
    if pd.isna(row.get("offered_rate")):
        return ""
    # Read back from the CSV a bool, or its words where the column also holds blanks.
    limited = " (client-limited)" if str(row.get("client_limited")) == "True" else ""
    return f"{row['sent_rate']:.0f} of {row['offered_rate']:.0f}{limited}"


def _recovery(row: pd.Series) -> str:
    if row["phase"] != "burst":
        return ""
    return NEVER_RECOVERED if not row["recovered"] else f"{row['recovery_s']:.1f} s"


def section_rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    columns = [
        "server",
        "backlog",
        "client",
        "load",
        "goodput of capacity",
        *map(str, Met),
        "p99 answered (ms)",
        "sent of offered (req/s)",
        "queue",
        "server CPU (%)",
        "server PSS (MiB)",
        "recovery",
    ]
    rows = []
    for _, row in table.iterrows():
        if row["status"] != Status.OK:
            rows.append(
                [row["server"], str(row["backlog"]), "", "", f"{row['status']}: {row['reason']}"]
                + [""] * (len(columns) - 5)
            )
            continue
        rows.append(
            [
                row["server"],
                row["backlog"],
                row["client"],
                _stretch(row),
                f"{row['goodput_of_capacity']:.2f}",
                *(f"{row[column]:.0f}" for column in MET_COLUMNS),
                "" if pd.isna(row["answered_p99_ms"]) else f"{row['answered_p99_ms']:.1f}",
                _sent(row),
                "" if pd.isna(row["queue_max"]) else f"{row['queue_max']:.0f}",
                _cell(row.get("server_cpu_percent"), "{:.0f}"),
                _cell(row.get("server_pss_peak_mb"), "{:.1f}"),
                _recovery(row),
            ]
        )
    return columns, rows


def console_lines(table: pd.DataFrame) -> list[str]:
    """A line per server: goodput as capacity's share at the highest multiple (the mean of its
    repeats), and its recovery."""
    lines = []
    for server, rows in table[table["status"] == Status.OK].groupby("server", sort=True):
        steady = rows[rows["phase"] == "steady"]
        top = steady[steady["multiple"] == steady["multiple"].max()]
        means = top.groupby(["backlog", "client"], sort=False)["goodput_of_capacity"].mean()
        multiple = f"{top['multiple'].max():g}×"
        said = [f"{backlog} {client} {multiple}: {share:.2f}" for (backlog, client), share in means.items()]
        said += [
            f"{r['backlog']} {r['client']} burst: {_recovery(r)}" for _, r in rows[rows["phase"] == "burst"].iterrows()
        ]
        lines.append(f"{server}: goodput of capacity " + "; ".join(said))
    return lines


CLASS_WORDS = {
    GoodputClass.HOLDS: "Holds",
    GoodputClass.SHEDS: "Sheds",
    GoodputClass.COLLAPSES: "Collapses",
    GoodputClass.UNDETERMINED: "Undetermined",
}


def _where(rows: pd.DataFrame, figure: str) -> str:
    """Each server once, its (backlog, client) conditions and their figures in brackets."""
    said = []
    for server, found in rows.groupby("server", sort=True):
        each = [f"{r['backlog']} {r['client']}{_figure(r['a_value'], figure)}" for _, r in found.iterrows()]
        said.append(f"{server} ({', '.join(each)})")
    return "; ".join(said)


def _figure(value, form: str) -> str:
    return "" if value is None or pd.isna(value) else " " + form.format(value)


def class_sentences(verdicts: pd.DataFrame) -> list[str]:
    """Which server holds at the judged multiple, which sheds, which collapses (goodput as capacity's share)."""
    classed = verdicts[verdicts["check"] == "goodput_at_2x"]
    classed = classed[classed["kind"] == str(OverloadKind.PAST_CAPACITY)]
    if classed.empty:
        return []
    shares = classed.iloc[0]["b"]
    return [
        f"{CLASS_WORDS[found]} at 2× its capacity ({shares}; goodput as its share): {_where(rows, '{:.2f}')}."
        for found in GoodputClass
        if not (rows := classed[classed["outcome"] == str(found.value)]).empty
    ]


def recovery_sentences(verdicts: pd.DataFrame) -> list[str]:
    """Which server never came back within the window after the burst, and how soon the others did."""
    back = verdicts[verdicts["check"] == "recovery_s"]
    never = back[back["outcome"] == str(OverloadOutcome.NEVER_RECOVERED)]
    again = back[back["outcome"] == str(OverloadOutcome.RECOVERED)]
    said = [f"Never recovered within the window after the burst: {_where(never, '')}."] if not never.empty else []
    return said + ([f"Recovered after the burst (seconds): {_where(again, '{:.1f} s')}."] if not again.empty else [])


def backlog_sentence(row: pd.Series) -> str:
    if row["outcome"] == Outcome.UNDETERMINED:
        why = row["why"] if isinstance(row["why"], str) else ""
        return f"{row['a']} against {row['b']}: goodput at 2× capacity undetermined ({why})."
    figure = f"{row['estimate']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}] of capacity"
    return f"{row['a']} against {row['b']}: goodput at 2× capacity {row['outcome']}, {figure}."


def verdict_sentences(verdicts_csv) -> list[str]:
    """The answer first: the classes, the recoveries, each server's own backlog against the set one."""
    if not verdicts_csv or not Path(verdicts_csv).stat().st_size:
        return []
    verdicts = pd.read_csv(verdicts_csv)
    if verdicts.empty:
        return []
    backlog = verdicts[verdicts["kind"] == str(OverloadKind.BACKLOG)]
    return [
        *class_sentences(verdicts),
        *recovery_sentences(verdicts),
        *(backlog_sentence(row) for _, row in backlog.iterrows()),
    ]


HANG_LEAD = (
    "A request that hangs (",
    Link("overload_hang.csv"),
    "): at half its capacity one request in twenty goes to a path that sleeps an hour, with the server's own "
    "request timeout and with one set; what the hung request's client got and when, how many the server ended "
    "before the client gave up (its worker freed), and the goodput the rest lost against the same rest without "
    "hangs.",
)


def hang_block(hang_csv) -> tuple:
    """The hung request's sentence and table, none without rows."""
    table = pd.read_csv(hang_csv) if hang_csv else pd.DataFrame()
    if table.empty:
        return ()
    columns = [
        "server",
        "timeout",
        "timeout (s)",
        "hung",
        "what their clients got",
        "after (s, median)",
        "ended by the server",
        "rest's goodput lost",
    ]
    rows = []
    for _, row in table.iterrows():
        if row["status"] != Status.OK:
            rows.append(
                [
                    row["server"],
                    row["timeout"],
                    _cell(row["timeout_s"], "{:g}"),
                    "",
                    f"{row['status']}: {row['reason']}",
                    "",
                    "",
                    "",
                ]
            )
            continue
        rows.append(
            [
                row["server"],
                row["timeout"],
                _cell(row["timeout_s"], "{:g}") or "none",
                f"{row['hung']:.0f}",
                _cell(row["hung_outcomes"]),
                _cell(row["hung_ended_s"]),
                f"{row['freed']:.0f}",
                _cell(row["rest_lost"], "{:.2f}"),
            ]
        )
    return (Paragraph(HANG_LEAD), Table(columns, rows, classes="sortable overload-hang", labelled=True))


def overload_section(overload_csv, verdicts_csv=None, hang_csv=None) -> Section | None:
    if not overload_csv:
        return None
    table = pd.read_csv(overload_csv)
    if table.empty:
        return None
    columns, rows = section_rows(table)
    answer = verdict_sentences(verdicts_csv)
    return Section(
        TITLE,
        (
            Paragraph(PAGE_LEAD, Medium.PAGE),
            Paragraph(MARKDOWN_LEAD, Medium.MARKDOWN),
            Paragraph(f"{TITLE} (overload.csv)", Medium.CONSOLE),
            # The answer first, everywhere: which holds, which collapses, before the counts.
            Sentences(answer),
            Sentences(console_lines(table), Medium.CONSOLE, marker=""),
            Table(columns, rows, classes="sortable overload", labelled=True),
            *hang_block(hang_csv),
        ),
    )
