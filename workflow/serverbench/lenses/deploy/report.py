"""The deploy answer's section: per language two sentences ("Deploy … because …; it would fail
at …") everywhere, then on the page and in answers.md a table of every choice with the lens and
the figure it rests on, and the candidates ruled out before it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.lens import EVERYWHERE, WRITTEN, Choice, Group, Ruling, Section, Sentences, Table
from serverbench.lenses.deploy.record import Role

TITLE = "Your deployment, decided on every lens"


def number(value: float) -> str:
    """A figure as a sentence writes it: whole above a hundred, three digits below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _figure(row: dict) -> str:
    if row["figure"] is None:
        return ""
    return f"{number(row['figure'])} {row['unit']} ({row['table']}: {row['row']})"


def _value(rows: list[dict], choice: Choice) -> str:
    chosen = [r for r in rows if r["choice"] == choice and r["ruling"] == Ruling.STANDS]
    return chosen[-1]["value"] if chosen else ""


def answer_sentences(language: str, rows: list[dict]) -> str:
    """The language's two sentences: what to deploy and why; what it would fail at."""
    mine = [r for r in rows if r["role"] == Role.RECOMMENDED]
    if not mine:
        return f"{language or 'Any language'}: nothing to deploy: {rows[0]['sentence']}."
    server = mine[0]
    front = _value(mine, Choice.FRONT)
    where = f" behind {front}" if front and front != "none" else " with no front" if front == "none" else ""
    setting = _value(mine, Choice.WORKERS)
    ruled = [f"{r['lens']} rules out {r['value']} ({_figure(r)})" for r in rows if r["role"] == Role.RULED_OUT]
    against = f"; {'; '.join(ruled)}" if ruled else ""
    held = sorted({r["lens"] for r in mine if r["ruling"] == Ruling.STANDS})
    because = f"{server['sentence']}, {_figure(server)}, and no lens that measured it rules it out ({', '.join(held)})"
    said = f"Deploy {server['value']} {setting}{where} for {language} because {because}{against}."
    if server["fails_at"] is not None:
        fails = number(server["fails_at"])
        said += f" It would fail at {fails} req/s, the lowest rate offered whose p99 missed the objective."
    return said


def _table(rows: list[dict]) -> Table:
    cells = [
        (
            r["role"],
            r["choice"],
            r["value"] or "",
            r["ruling"],
            r["lens"] or "",
            _figure(r),
            r["sentence"] or "",
            " ".join(str(x) for x in (r["runner_up"], r["versus"]) if x),
        )
        for r in rows
    ]
    columns = ("role", "choice", "value", "ruling", "lens", "figure", "why", "runner-up")
    return Table(columns, tuple(cells), media=WRITTEN, labelled=True)


def deploy_section(table_csv: Path) -> Section | None:
    table = pd.read_csv(table_csv)
    if table.empty:
        return None
    table = table.astype(object).where(table.notna(), None)
    groups = []
    for key, part in table.groupby("language", sort=False, dropna=False):
        # A row of no language (nothing left to deploy) groups under NaN, which no heading is.
        language = None if pd.isna(key) else key
        rows = part.to_dict("records")
        sentence = answer_sentences(language, rows)
        groups.append(Group(language or "every language", (Sentences((sentence,), EVERYWHERE), _table(rows))))
    return Section(TITLE, tuple(groups))
