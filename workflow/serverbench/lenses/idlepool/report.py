"""Which balancer idle timeout is safe for this server? Its section, from idle_pool_answers.csv
(a row per server and deployment) and idle_pool.csv (every idle time's reuses).

The answer comes first, a sentence per server everywhere (the page, answers.md, the console):
the largest balancer idle timeout that is safe at its own keep-alive, the race window measured,
whether raising the keep-alive closes it and, behind each front swept, whether the front removes
the race. The table of every deployment, and how it was measured, follow on the page."""

from __future__ import annotations

import pandas as pd

from serverbench.lens import Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.record.vocabulary import Status

TITLE = "Which balancer idle timeout is safe for this server?"
ANSWERS_CSV = "idle_pool_answers.csv"
COLUMNS = (
    "server",
    "deployment",
    "keep-alive",
    "race window",
    "safe balancer idle timeout",
    "raised keep-alive",
    "front removes the race",
    "idle connections that starve a fresh client",
)


def _seconds(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:g} s"


def _window(row: pd.Series) -> str:
    """The idle times at which reuses failed, "" where none did."""
    return row["race_window_s"] if isinstance(row["race_window_s"], str) else ""


def _yes(value) -> bool | None:
    """A True/False/None cell as the CSV reads it back."""
    return None if value is None or pd.isna(value) else value in (True, "True")


def front_of(deployment: str) -> str:
    return deployment.split("+")[-1]


def _own(row: pd.Series) -> str:
    """The server bare at its own keep-alive: the safe idle timeout and the race window."""
    keepalive = f"its {row['keepalive_s']:g} s keep-alive ({row['keepalive_setting']})"
    safe = _seconds(row["safe_idle_timeout_s"])
    if _window(row):
        return (
            f"a balancer idle timeout up to {safe} is safe at {keepalive}; reuses failed at idle "
            f"{_window(row)} s (the race window)"
        )
    said = f"no reuse failed at any balancer idle timeout swept (up to {safe}) at {keepalive}"
    if not pd.isna(row.get("closed_first_s")):
        said += (
            f"; from {_seconds(row['closed_first_s'])} idle it had closed the pooled connections first, "
            "cleanly (a balancer sees the close and reconnects); no close crossed a send here"
        )
    return said


def _raised(row: pd.Series) -> str:
    closes = _yes(row["raised_closes_window"])
    if closes is None:
        return ""
    verb = "closes" if closes else "does not close"
    return f"; raising it to {_seconds(row['raised_keepalive_s'])} {verb} the window"


def _behind(row: pd.Series) -> str:
    """One deployment behind a front: whether the front removes the race."""
    front = front_of(row["deployment"])
    if row["status"] != Status.OK:
        return f"behind {front} not swept ({row['reason']})"
    removes = _yes(row["front_removes_race"])
    if removes is True:
        return f"behind {front} no reuse failed: the front removes the race"
    if removes is False:
        return f"behind {front} reuses still failed at idle {_window(row)} s: the front does not remove the race"
    if _window(row):
        return f"behind {front} reuses failed at idle {_window(row)} s"
    return f"behind {front} no reuse failed either"


def answer(rows: pd.DataFrame) -> str:
    """One server's answer: bare at its own keep-alive, raised, behind each front, and the cost."""
    bare = rows[rows["deployment"] == rows["server"]]
    fronted = rows[rows["deployment"] != rows["server"]]
    server = rows["server"].iloc[0]
    if bare.empty or bare.iloc[0]["status"] != Status.OK:
        why = bare.iloc[0]["reason"] if len(bare) else "its bare deployment has no row"
        return f"{server}: not swept ({why})."
    own = bare.iloc[0]
    if _yes(own.get("never_kept")):
        said = f"{server}: never keeps a connection (every answer closes it), so a balancer's pool has nothing to race"
        return said + "; every request pays a new connection."
    said = f"{server}: {_own(own)}{_raised(own)}"
    said += "".join(f"; {_behind(row)}" for _, row in fronted.iterrows())
    if not pd.isna(own["starved_beside"]):
        held = int(own["starved_beside"])
        said += f"; {held} idle connection{'s' if held != 1 else ''} starve{'' if held != 1 else 's'} a fresh client"
    return said + "."


def _row(row: pd.Series) -> tuple[str, ...]:
    closes = _yes(row["raised_closes_window"])
    raised = "–" if closes is None else f"{_seconds(row['raised_keepalive_s'])}: {'closes' if closes else 'open'}"
    removes = _yes(row["front_removes_race"])
    front = "–" if removes is None else ("yes" if removes else "no")
    starved = "–" if pd.isna(row["starved_beside"]) else str(int(row["starved_beside"]))
    window = _window(row) or ("none" if row["status"] == Status.OK else f"not swept: {row['reason']}")
    return (
        row["server"],
        row["deployment"],
        _seconds(row["keepalive_s"]),
        window,
        _seconds(row["safe_idle_timeout_s"]),
        raised,
        front,
        starved,
    )


def idle_pool_section(answers_csv, table_csv=None) -> Section | None:
    answers = pd.read_csv(answers_csv)
    if answers.empty:
        return None
    by_server = [answer(rows) for _, rows in answers.groupby(["profile", "server"], sort=False)]
    return Section(
        TITLE,
        (
            Paragraph(f"{TITLE} ({ANSWERS_CSV})", Medium.CONSOLE),
            # The answer first, a sentence per server, on every medium.
            Sentences(by_server),
            Paragraph(
                (
                    "Connections pooled as a balancer pools them: answered once, held idle, reused after each idle "
                    "time swept around the server's own keep-alive; a reuse reset or closed before its answer is a "
                    "502 at the balancer (one seen closed before the send is retried). Each idle time's failed "
                    "reuses judged against the shortest's by the one rule (",
                    Link("idle_pool_verdicts.csv"),
                    ", every reuse in ",
                    Link("idle_pool.csv"),
                    "); the safe balancer idle timeout is the longest idle time before the first whose failed "
                    "reuses are not judged equivalent to the shortest's or lower.",
                ),
                Medium.PAGE,
            ),
            Table(COLUMNS, [_row(row) for _, row in answers.iterrows()], Medium.PAGE | Medium.MARKDOWN),
        ),
        anchor="idle-pool",
    )
