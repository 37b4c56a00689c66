"""The section "Past capacity: does it fall over?": overload.csv read as a row per (server,
backlog, client, stretch) and a console line per server (the core writes the page, answers.md
and the console from it)."""

from __future__ import annotations

import pandas as pd

from serverbench.lens import Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.overload.table import MET_COLUMNS
from serverbench.lenses.overload.words import NEVER_RECOVERED, Met
from serverbench.record.vocabulary import Status

TITLE = "Past capacity: does it fall over?"
PAGE_LEAD = (
    "Each server's capacity at the p99 objective found first, then offered open loop at multiples of it and a "
    "burst, at its own listen backlog and at the profile's (",
    Link("overload.csv"),
    "). Every request counted at the client by what it met; goodput is the answers within the objective per "
    "second; recovery the seconds after the burst until the offered rate is met again.",
)
MARKDOWN_LEAD = "Each server past its capacity at the p99 objective (overload.csv; docs/overload.md)."


def _stretch(row: pd.Series) -> str:
    return "burst" if row["phase"] == "burst" else f"{row['multiple']:g}×"


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
        "queue",
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
                "" if pd.isna(row["queue_max"]) else f"{row['queue_max']:.0f}",
                _recovery(row),
            ]
        )
    return columns, rows


def console_lines(table: pd.DataFrame) -> list[str]:
    """A line per server: goodput as capacity's share at the highest multiple, and its recovery."""
    lines = []
    for server, rows in table[table["status"] == Status.OK].groupby("server", sort=True):
        steady = rows[rows["phase"] == "steady"]
        top = steady[steady["multiple"] == steady["multiple"].max()]
        said = [
            f"{r['backlog']} {r['client']} {r['multiple']:g}×: {r['goodput_of_capacity']:.2f}"
            for _, r in top.iterrows()
        ]
        said += [
            f"{r['backlog']} {r['client']} burst: {_recovery(r)}" for _, r in rows[rows["phase"] == "burst"].iterrows()
        ]
        lines.append(f"{server}: goodput of capacity " + "; ".join(said))
    return lines


HANG_LEAD = (
    "A request that hangs (",
    Link("overload_hang.csv"),
    "): at half its capacity one request in twenty goes to a path that sleeps an hour, with the server's own "
    "request timeout and with one set; what the hung request's client got and when, how many the server ended "
    "before the client gave up (its worker freed), and the goodput the rest lost against the same rest without "
    "hangs.",
)


def _cell(value, form: str = "{}") -> str:
    return "" if pd.isna(value) else form.format(value)


def hang_block(hang_csv) -> tuple:
    """The hung request's sentence and table, none without rows."""
    table = pd.read_csv(hang_csv) if hang_csv else pd.DataFrame()
    if table.empty:
        return ()
    columns = ["server", "timeout", "timeout (s)", "hung", "what their clients got", "after (s, median)",
               "ended by the server", "rest's goodput lost"]  # fmt: skip
    rows = []
    for _, row in table.iterrows():
        if row["status"] != Status.OK:
            rows.append([row["server"], row["timeout"], _cell(row["timeout_s"], "{:g}"), "",
                         f"{row['status']}: {row['reason']}", "", "", ""])  # fmt: skip
            continue
        rows.append([row["server"], row["timeout"], _cell(row["timeout_s"], "{:g}") or "none", f"{row['hung']:.0f}",
                     _cell(row["hung_outcomes"]), _cell(row["hung_ended_s"]), f"{row['freed']:.0f}",
                     _cell(row["rest_lost"], "{:.2f}")])  # fmt: skip
    return (Paragraph(HANG_LEAD), Table(columns, rows, classes="sortable overload-hang", labelled=True))


def overload_section(overload_csv, hang_csv=None) -> Section | None:
    if not overload_csv:
        return None
    table = pd.read_csv(overload_csv)
    if table.empty:
        return None
    columns, rows = section_rows(table)
    return Section(
        TITLE,
        (
            Paragraph(PAGE_LEAD, Medium.PAGE),
            Paragraph(MARKDOWN_LEAD, Medium.MARKDOWN),
            Paragraph(f"{TITLE} (overload.csv)", Medium.CONSOLE),
            Sentences(console_lines(table), Medium.CONSOLE, marker=""),
            Table(columns, rows, classes="sortable overload", labelled=True),
            *hang_block(hang_csv),
        ),
    )
