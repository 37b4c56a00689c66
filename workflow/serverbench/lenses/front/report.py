"""Does it need a front? Its section (a row per server, both languages, its answer in a sentence
each), from front_verdicts.csv and front.csv."""

from __future__ import annotations

import json

import pandas as pd

from serverbench.lens import Emphasis, Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.front.record import ALONE as BARE
from serverbench.lenses.front.record import EVERY_SLOW_KIND, FrontAnswer, SlowKind
from serverbench.record.vocabulary import Metric, Outcome

SLOW_COLUMNS = (SlowKind.SENDERS, SlowKind.BODY, SlowKind.READERS, SlowKind.NEW_CONNECTIONS)
STARVED_COLUMN = "placements starved"  # bare → behind the front, k of n (decide.front's placements)


def _percent(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{100 * value:.0f}%"


def _kept(rows: pd.DataFrame, kind: str, relative: str = "as many") -> pd.DataFrame:
    chosen = rows[(rows["metric"] == Metric.KEPT) & (rows["slow"] == kind)]
    at = chosen[chosen["relative"] == relative]
    return at if len(at) else chosen


def kept_cell(rows: pd.DataFrame, kind: str) -> str:
    """Bare → behind the front: the share of their rate the normal clients kept."""
    chosen = _kept(rows, kind)
    if chosen.empty:
        return "–"
    bare = chosen[chosen["b"] == BARE]
    fronted = chosen[chosen["b"] != BARE]
    said = _percent(bare.iloc[0]["a_value"]) if len(bare) else "–"
    if len(fronted):
        said += f" → {_percent(fronted.iloc[0]['a_value'])} ({fronted.iloc[0]['outcome']})"
    else:
        said += f" ({bare.iloc[0]['outcome']})" if len(bare) else ""
    return said


def cost_cell(rows: pd.DataFrame) -> str:
    cost = rows[rows["metric"] == Metric.SPEED]
    if cost.empty or pd.isna(cost.iloc[0]["ratio"]):
        return "–"
    row = cost.iloc[0]
    return f"{row['ratio']:.2f}× ({row['ci_low']:.2f}–{row['ci_high']:.2f}: {row['outcome']})"


WORK_WORDS = {"instructions_per_request": "instructions", "syscalls_per_request": "syscalls"}


def work_cell(rows: pd.DataFrame) -> str:
    """Each work count behind the front over bare: "1.00× instructions (equivalent), 1.60× syscalls (more work)"."""
    work = rows[rows["metric"] == Metric.WORK]
    if work.empty:
        return "–"
    said = [f"{row['ratio']:.2f}× {WORK_WORDS[row['count']]} ({row['outcome']})" for _, row in work.iterrows()]
    return ", ".join(said)


def _placements(rows: pd.DataFrame, front: bool) -> pd.Series | None:
    """The pooled row (every slow kind) of the bare server against its rate alone, or of the front
    against bare: where its ``starved_*`` counts are (None in a table written before them)."""
    if "placements" not in rows.columns:
        return None
    pooled = rows[(rows["metric"] == Metric.KEPT) & (rows["slow"] == EVERY_SLOW_KIND)]
    pooled = pooled[pooled["b"] != BARE] if front else pooled[pooled["b"] == BARE]
    return pooled.iloc[0] if len(pooled) and not pd.isna(pooled.iloc[0]["placements"]) else None


def starved_cell(rows: pd.DataFrame) -> str:
    """Placements that starved the normal clients bare → behind the front: "3 of 10 → 0 of 10"."""
    bare, front = _placements(rows, False), _placements(rows, True)
    if bare is None:
        return "–"
    said = f"{int(bare['starved_a'])} of {int(bare['placements'])}"
    return said + (f" → {int(front['starved_a'])} of {int(front['placements'])}" if front is not None else "")


def _starved_clause(rows: pd.DataFrame) -> str:
    bare, front = _placements(rows, False), _placements(rows, True)
    if bare is None:
        return ""
    said = f"; the slow clients starved them in {int(bare['starved_a'])} of {int(bare['placements'])} placements bare"
    if front is not None:
        said += f", {int(front['starved_a'])} of {int(front['placements'])} behind {front['a'].split('+')[-1]}"
    return said


def _needs_clause(rows: pd.DataFrame, holds) -> str:
    """What the front saved: the clearest saving, else the placements it spared."""
    kept_rows = rows[rows["metric"] == Metric.KEPT]
    saved = kept_rows[kept_rows["outcome"] == Outcome.HIGHER]
    if saved.empty and "starved_b" in rows.columns:
        saved = kept_rows[(kept_rows["starved_b"] > 0) & (kept_rows["starved_a"] == 0)]
    if saved.empty:
        return ""
    best = saved.iloc[0]
    beside = (
        "every slow client measured"
        if best["slow"] == EVERY_SLOW_KIND
        else SlowKind(best["slow"]).counted(int(best["slow_count"]))
    )
    return (
        f": beside {beside} (its workers × threads hold {holds} requests at once) the normal clients kept "
        f"{_percent(best['b_value'])} of their rate bare and {_percent(best['a_value'])} behind "
        f"{best['a'].split('+')[-1]} (medians)"
    )


def server_sentence(server: str, rows: pd.DataFrame, table: pd.DataFrame) -> str:
    """One server's answer, and the figures it rests on."""
    said = rows.iloc[0]["answer"]
    language = rows.iloc[0].get("language")
    mine = table[table["server"] == server]
    holds = int(mine["holds_at_once"].iloc[0]) if len(mine) else None
    head = f"{server} ({language}): {said}"
    if said == FrontAnswer.NEEDS:
        head += _needs_clause(rows, holds) + _starved_clause(rows)
    elif said == FrontAnswer.NOT_NEEDED:
        bare = rows[(rows["metric"] == Metric.KEPT) & (rows["b"] == BARE)]
        low, high = bare["a_value"].min(), bare["a_value"].max()
        kept = f"{_percent(low)}–{_percent(high)}"
        head += f": bare, beside every slow client measured, the normal clients kept {kept} of their rate"
        head += _starved_clause(rows)
    else:
        head += _starved_clause(rows)
    cost = rows[rows["metric"] == Metric.SPEED]
    if len(cost) and not pd.isna(cost.iloc[0]["ratio"]):
        head += f"; with fast clients only the front gives {cost_cell(rows)} of the bare rate"
    work = rows[rows["metric"] == Metric.WORK]
    if len(work):
        head += f", and each request takes {work_cell(rows)}"
    return head + "."


def timeouts_sentence(table: pd.DataFrame) -> str | None:
    """The timeouts each deployment applies to a client, as the record states them."""
    parts = []
    for deployment, rows in table.groupby("deployment", sort=True):
        own = json.loads(rows["server_timeouts"].iloc[0] or "{}")
        front = json.loads(rows["front_timeouts"].iloc[0] or "{}")
        said = ", ".join(
            f"{k} {v:g}" for k, v in sorted({**own, **{f"front {k}": v for k, v in front.items()}}.items())
        )
        parts.append(f"{deployment}: {said or 'none declared'}")
    return "Timeouts (s): " + "; ".join(parts) + "." if parts else None


TITLE = "Does it need a front?"


def _conditions(table: pd.DataFrame) -> str:
    """What the normal and the slow clients were, and the server's workers, in words."""
    first = table.dropna(subset=["kind"]).iloc[0] if len(table.dropna(subset=["kind"])) else table.iloc[0]
    return (
        f"{int(first['clients'])} normal clients (closed loop, keep-alive), {int(first['workers'])} workers × "
        f"{int(first['threads'])} thread{'s' * (int(first['threads']) != 1)} on {int(first['cpus'])} "
        f"CPU{'s' * (int(first['cpus']) != 1)}, the front on the same CPUs; slow clients "
        f"send or read once every {first['pace_s']:g} s"
    )


def _row(server: str, mine: pd.DataFrame) -> tuple[str, ...]:
    """The table's row of one server, in COLUMNS' order."""
    first = mine.iloc[0]
    kinds = tuple(kept_cell(mine, kind) for kind in SLOW_COLUMNS)
    figures = (cost_cell(mine), work_cell(mine), *kinds, starved_cell(mine))
    return (server, str(first.get("language")), str(first["answer"]), *figures)


COLUMNS = ("server", "language", "answer", "cost", "work", *map(str, SLOW_COLUMNS), STARVED_COLUMN)


def front_section(table_csv, verdicts_csv) -> Section | None:
    """The section: a row per server, its answer in a sentence, the conditions and timeouts."""
    table = pd.read_csv(table_csv)
    verdicts = pd.read_csv(verdicts_csv)
    if verdicts.empty:
        return None
    by_server = list(verdicts.groupby("server", sort=True))
    conditions = _conditions(table)
    timeouts = timeouts_sentence(table)
    return Section(
        TITLE,
        (
            Paragraph(
                (
                    "Each server bare and behind nginx (a buffering reverse proxy), both alive side by side and "
                    f"measured in alternating rounds, with {conditions}. ",
                    Emphasis("cost"),
                    ": the normal clients' rate behind the front over bare with fast clients only; ",
                    Emphasis("work"),
                    ": instructions per request, the front's included; each slow kind: the share of their rate "
                    "alone the normal clients kept beside as many slow clients as the server holds requests at "
                    "once, bare → behind the front (",
                    Link("front_verdicts.csv"),
                    ", every run in ",
                    Link("front.csv"),
                    ").",
                ),
                Medium.PAGE,
            ),
            Paragraph(f"Measured with {conditions}.", Medium.MARKDOWN),
            Paragraph(TITLE, Medium.CONSOLE),
            Table(COLUMNS, [_row(server, mine) for server, mine in by_server], Medium.PAGE),
            Sentences([server_sentence(server, mine, table) for server, mine in by_server]),
            Paragraph(timeouts or ""),
        ),
    )
