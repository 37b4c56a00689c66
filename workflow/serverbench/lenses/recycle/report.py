"""The recycle lens's words: its section "Do your workers restart, and what does it cost?",
from recycle.csv, recycle_verdicts.csv and recycle_capacity.csv."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.lens import Block, Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.record.vocabulary import Outcome, Status

TITLE = "Do your workers restart, and what does it cost?"
# The section's columns and how each figure of recycle.csv is written.
COLUMNS = {
    "server": ("server", "{}"),
    "recycling": ("setting", "{}"),
    "clients": ("client", "{}"),
    "answers/s": ("answers_per_s", "{:.0f}"),
    "restarts": ("restarts", "{:.0f}"),
    "per 10,000 answers": ("restarts_per_10k", "{:.1f}"),
    "failed per restart": ("failed_per_restart", "{:.2f}"),
    "most leaving at once": ("most_restarts_at_once", "{:.0f}"),
    "p99 near a restart (ms)": ("p99_near_ms", "{:.2f}"),
    "p99 between (ms)": ("p99_between_ms", "{:.2f}"),
    "longest wait (s)": ("longest_gap_s", "{:.3f}"),
    "leak per answer (× planted)": ("leak_against_planted", "{:.3f}"),
    "largest process, 1st → 2nd half (MB)": ("peak_first_half_mb", "{:.1f}"),
}
# The capacity table's columns (recycle_capacity.csv).
CAPACITY_COLUMNS = {
    "server": ("server", "{}"),
    "recycling": ("setting", "{}"),
    "life": ("life", "{:.0f}"),
    "capacity (req/s)": ("capacity_rps", "{:.0f}"),
    "missed at (req/s)": ("missed_rps", "{:.0f}"),
    "against own": ("against_own", "{:.2f}×"),
    "workers left": ("workers_left", "{:.0f}"),
    "PSS at capacity (MB)": ("memory_mb", "{:.1f}"),
}
CHECK_WORDS = {
    "failed_per_s": "failed requests per second",
    "restarts_at_once": "workers leaving at once",
}


def _cell(row: pd.Series, column: str, form: str) -> str:
    value = row.get(column)
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    return form.format(value)


def table_rows(table: pd.DataFrame) -> list[dict]:
    rows = []
    for _, row in table.iterrows():
        shown = {title: _cell(row, column, form) for title, (column, form) in COLUMNS.items()}
        if isinstance(row.get("upstream"), str):
            shown["clients"] += f", upstream {row['upstream']}"
        leak = "leak per answer (× planted)"
        if not shown[leak] and pd.notna(row.get("leak_bytes_per_request")) and pd.isna(row.get("leaks_bytes")):
            # An app of the user's plants no leak: what it keeps per answer is its own, in bytes.
            shown[leak] = f"{row['leak_bytes_per_request']:.0f} B (the app's own)"
        peak = "largest process, 1st → 2nd half (MB)"
        if shown[peak] and pd.notna(row.get("peak_second_half_mb")):
            bounded = " (bounded)" if row.get("bounded") is True or row.get("bounded") == "True" else " (growing)"
            shown[peak] += f" → {row['peak_second_half_mb']:.1f}{bounded}"
        # Why a run was not measured, last: a long reason in a figure's column widens the whole table.
        shown["notes"] = f"{row['status']}: {row['reason']}" if row["status"] != Status.OK else ""
        rows.append(shown)
    return rows


def _clients(row: pd.Series) -> str:
    """The kind of client, and behind a front how it reaches the app server."""
    upstream = row.get("upstream")
    return f"{row['client']} clients" + (f" (upstream {upstream})" if isinstance(upstream, str) else "")


def own_sentences(table: pd.DataFrame) -> list[str]:
    """What each server does when not asked: restarts seen at its own setting, by client."""
    found = []
    own = table[(table["setting"] == "own") & (table["status"] == Status.OK)]
    for server, runs in own.groupby("server", sort=True):
        seen = {_clients(row): int(row["restarts"]) for _, row in runs.iterrows() if pd.notna(row["restarts"])}
        limit = runs["limit"].dropna()
        said = (
            f"recycles every {int(limit.iloc[0])} {runs['counts'].iloc[0]} by default"
            if len(limit)
            else "does not recycle unless asked"
        )
        clients = ", ".join(f"{count} restarts with {client}" for client, count in sorted(seen.items()))
        found.append(f"{server} {said}: {clients} at its own setting.")
    return found


def _sentence(row: pd.Series) -> str:
    words = CHECK_WORDS.get(row["check"], row["check"])
    where = f"{row['client']} clients"
    if isinstance(row.get("upstream"), str):
        where += f", upstream {row['upstream']}"
    if pd.isna(row["estimate"]):
        return f"{row['a']} against {row['b']} ({where}): {words} undetermined ({row['why']})."
    if row["scale"] == "difference":
        figure = f"{row['estimate']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]"
    else:
        figure = f"{row['estimate']:.2f}× [{row['ci_low']:.2f}–{row['ci_high']:.2f}]"
    if row["outcome"] == Outcome.EQUIVALENT:
        return f"{row['a']} and {row['b']} ({where}): {words} equivalent, {figure}."
    return f"{row['a']} against {row['b']} ({where}): {words} {row['outcome']}, {figure}."


def verdict_sentences(judged: pd.DataFrame) -> list[str]:
    """Every decided comparison; how many were not."""
    if judged.empty:
        return []
    shown = judged[judged["outcome"] != Outcome.UNDETERMINED]
    sentences = [_sentence(row) for _, row in shown.iterrows()]
    if len(judged) > len(shown):
        sentences.append(f"{len(judged) - len(shown)} other comparisons undetermined (recycle_verdicts.csv).")
    return sentences


def capacity_rows(capacity: pd.DataFrame) -> list[dict]:
    rows = []
    for _, row in capacity.iterrows():
        shown = {title: _cell(row, column, form) for title, (column, form) in CAPACITY_COLUMNS.items()}
        shown["notes"] = f"{row['status']}: {row['reason']}" if row["status"] != Status.OK else ""
        rows.append(shown)
    return rows


def capacity_sentences(capacity: pd.DataFrame) -> list[str]:
    """Per server, its capacity at the set recycling against its own, life by life: shown, not judged."""
    found = []
    measured = capacity[capacity["status"] == Status.OK]
    for server, lives in measured.groupby("server", sort=True):
        own = lives[lives["setting"] == "own"]["capacity_rps"].tolist()
        for label, set_ in lives[lives["setting"] != "own"].groupby("setting", sort=True):
            ratios = ", ".join(f"{value:.2f}×" for value in set_["against_own"].dropna())
            left = int(set_["workers_left"].fillna(0).sum())
            figures = "; ".join(f"{value:.0f}" for value in set_["capacity_rps"])
            owns = "; ".join(f"{value:.0f}" for value in own)
            found.append(
                f"{server} at {label}: {figures} req/s at the objective against {owns} at its own"
                f" ({ratios or 'no ratio'}), {left} workers left during the search."
            )
    return found


def _read(path) -> pd.DataFrame:
    return pd.read_csv(path) if path and Path(path).exists() and Path(path).stat().st_size > 1 else pd.DataFrame()


def _table(columns: list[str], rows: list[dict], classes: str) -> Table:
    return Table(columns, [[row[column] for column in columns] for row in rows], classes=classes, labelled=True)


def _capacity_blocks(capacity: pd.DataFrame) -> list[Block]:
    """Capacity at the objective with recycling and without: shown, not judged."""
    if capacity.empty:
        return []
    objective = capacity["objective_p99_ms"].dropna()
    objective_ms = float(objective.iloc[0]) if len(objective) else None
    return [
        Paragraph(
            (
                f"Capacity at p99 within {objective_ms} ms with recycling against without (",
                Link("recycle_capacity.csv"),
                "): open-loop rates, a connection per request, bisected between the highest rate that met the "
                "objective and the lowest that missed it, at the server's own recycling and at the set one, each a "
                "start of its own. A life also reads the kernel's placement of its connections: shown, not judged.",
            ),
            Medium.PAGE,
        ),
        Paragraph(
            f"Capacity at p99 within {objective_ms:g} ms (recycle_capacity.csv; one life each"
            " reads the kernel's placement too: shown, not judged):",
            Medium.MARKDOWN,
        ),
        Sentences(capacity_sentences(capacity)),
        _table([*CAPACITY_COLUMNS, "notes"], capacity_rows(capacity), "sortable comparisons recycle-capacity"),
    ]


def recycle_section(table_csv, verdicts_csv=None, capacity_csv=None) -> Section | None:
    """The section: what each server does unasked, the runs, the settings judged, the capacity."""
    table = _read(table_csv)
    if table.empty:
        return None
    judged, capacity = _read(verdicts_csv), _read(capacity_csv)
    own, sentences = own_sentences(table), verdict_sentences(judged)
    judged_blocks = [
        Paragraph(
            (
                "Each setting against the server's own, and jitter against none (",
                Link("recycle_verdicts.csv"),
                "; per second of load or per restart, a 95% bootstrap interval against the check's margin):",
            ),
            Medium.PAGE,
        ),
        Sentences(sentences, Medium.PAGE | Medium.CONSOLE),
    ]
    return Section(
        TITLE,
        (
            Paragraph(f"{TITLE} ({table_csv})", Medium.CONSOLE),
            Paragraph(
                (
                    "Each server under a closed loop of connections, kept alive or a connection per request, at its "
                    "own recycling and at each limit the profile sets (",
                    Link("recycle.csv"),
                    "). A restart is a worker process seen to leave the server's process tree; around it, the "
                    "requests that failed and the p99 of those sent within the window, against the p99 between "
                    "restarts. The app keeps a known number of bytes per answer: the slope of the server's private "
                    "memory over its answers against it, and the largest process in each half of the load (bounded: "
                    "it rose at under a quarter of the rate of a worker that never restarts).",
                ),
                Medium.PAGE,
            ),
            Paragraph(
                "Each server under a closed loop at its own recycling and at each set limit (recycle.csv;"
                " docs/recycle.md); restarts are worker processes seen to leave.",
                Medium.MARKDOWN,
            ),
            Sentences(own, Medium.PAGE | Medium.CONSOLE),
            # answers.md reads the outcomes with the servers' own, before the table.
            Sentences([*own, *sentences], Medium.MARKDOWN),
            _table([*COLUMNS, "notes"], table_rows(table), "sortable comparisons recycle"),
            *(judged_blocks if sentences else []),
            *_capacity_blocks(capacity),
        ),
    )
