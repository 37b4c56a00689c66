"""The HTTP lens's section: what it adds to the Answers (where a compared server fails an
HTTP check that the server it is compared with passes; how each server reads a malformed
request), and the conformance matrix and the request framing panel that close the page. The
checks never change a verdict; they say what a req/s figure does not."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.decide.pairs import LATENCY_KINDS
from serverbench.lens import Block, Cell, Group, Link, Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.http.record import CheckOutcome
from serverbench.record.conformance import met

# The titles of its sentences (the page's `h3`, answers.md's `##`).
PROTOCOL, FRAMING_TITLE = "Speaks HTTP differently", "Request framing"
# Its tables' headings on the page.
MATRIX_HEADING = "Does it speak HTTP?"
FRAMING_HEADING = "Request framing: what a server does with a malformed or ambiguous request"
TABLE = "conformance.csv"


def outcomes(conformance: pd.DataFrame) -> dict[tuple[str, str], dict[str, tuple[str, str]]]:
    """(profile, server) -> check -> (outcome, note)."""
    found: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    for row in conformance.itertuples(index=False):
        found.setdefault((row.profile, row.server), {})[row.check] = (row.outcome, str(row.note))
    return found


def protocol_differences(verdicts: pd.DataFrame, conformance: pd.DataFrame) -> list[str]:
    """One sentence per compared pair and direction in which one side fails a
    check the other passes, in the order the pairs first appear."""
    if conformance.empty or verdicts.empty:
        return []
    # The request framing checks have a sentence of their own per server (framing_sentences).
    by_server = outcomes(conformance.drop(framing_rows(conformance).index))
    compared = verdicts[~verdicts["kind"].isin(LATENCY_KINDS)]
    pairs = dict.fromkeys((row.profile, row.a, row.b) for row in compared.itertuples(index=False))
    sentences = []
    for profile, a, b in pairs:
        for failing, passing in ((a, b), (b, a)):
            mine, theirs = by_server.get((profile, failing), {}), by_server.get((profile, passing), {})
            failed = [
                f"{check} ({note})"
                for check, (outcome, note) in mine.items()
                if outcome == CheckOutcome.FAIL and theirs.get(check, ("",))[0] == CheckOutcome.PASS
            ]
            if failed:
                sentences.append(f"{failing} fails {'; '.join(failed)}, which {passing}, compared with it, passes.")
    return list(dict.fromkeys(sentences))


FRAMING = "request framing"


def framing_rows(conformance: pd.DataFrame) -> pd.DataFrame:
    """The request framing checks (conformance/2 results; none in older ones)."""
    if "group" not in conformance.columns:
        return conformance.iloc[0:0]
    return conformance[conformance["group"] == FRAMING]


def framing_sentences(conformance: pd.DataFrame) -> list[str]:
    """One sentence per server on how it reads a malformed or ambiguous request: the MUSTs of
    RFC 9112/9110 it met, the ones it broke (first those that desynchronised it), and the
    requests it should have refused and took."""
    rows = framing_rows(conformance)
    sentences = []
    for (_, server), checks in rows.groupby(["profile", "server"], sort=False):
        musts = checks[checks["requirement"] == "MUST"]
        broken = musts[~met_column(musts)]
        desync = truth(broken["desynchronised"])
        broken = pd.concat([broken[desync], broken[~desync]])
        took = checks[(checks["requirement"] == "SHOULD") & (checks["outcome"] == CheckOutcome.WARN)]
        if broken.empty:
            text = f"{server} met all {len(musts)} MUSTs of RFC 9112/9110 on request framing"
        else:
            named = ", ".join(f"{row.check} ({_in_brief(row)})" for row in broken.head(3).itertuples())
            more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
            which = "among them" if len(broken) > 1 else "the one broken:"
            silent = int((broken["outcome"] == CheckOutcome.WARN).sum())
            owed = f" ({silent} of them closed safely without the 400 owed)" if silent else ""
            text = (
                f"{server} broke {len(broken)} of {len(musts)} MUSTs of RFC 9112/9110 on request framing{owed}, "
                f"{which} {named}{more}"
            )
        shoulds = len(checks[checks["requirement"] == "SHOULD"])
        if len(took):
            text += f"; it took {len(took)} of {shoulds} requests it should refuse ({', '.join(took['check'])})"
        sentences.append(text + ".")
    return list(dict.fromkeys(sentences))


def truth(values: pd.Series) -> pd.Series:
    """A column of flags as conformance.csv gives it back (True, "True", False, empty)."""
    return values.map(lambda value: value is True or str(value) == "True").astype(bool)


def met_column(checks: pd.DataFrame) -> pd.Series:
    """Each check's ``met`` (serverbench.record.conformance's rule, as conformance.csv has it);
    for a conformance.csv written before it had the column, the same rule from the outcomes."""
    if "met" in checks.columns:
        return truth(checks["met"])
    required = checks["requirement"].fillna("").astype(str) != "" if "requirement" in checks.columns else False
    return checks["outcome"].map(met).astype(bool) & required


def _in_brief(row) -> str:
    """What the server did (once desynchronised: how, without what it answered)."""
    did = str(row.did)
    return did.split(" (")[0] if str(row.desynchronised) == "True" else did


def conformance_matrix(table: pd.DataFrame) -> dict[str, dict]:
    """Servers as rows, checks as columns, one matrix per language (the httplint
    findings stay in conformance.csv; the request framing checks have a panel of their own)."""
    table = table[table["check"] != "httplint"].drop(framing_rows(table).index).fillna({"note": ""})
    checks = list(dict.fromkeys(table["check"]))
    matrices = {}
    for language, rows in table.groupby("language", sort=True):
        by_server = {
            server: dict(zip(group["check"], group.itertuples(), strict=True))
            for server, group in rows.groupby("server")
        }
        matrices[language] = {
            "checks": checks,
            "rows": [
                {
                    "server": server,
                    "cells": [
                        {"outcome": found[check].outcome, "note": found[check].note}
                        if check in found
                        else {"outcome": "", "note": ""}
                        for check in checks
                    ],
                }
                for server, found in by_server.items()
            ],
        }
    return matrices


def framing_panel(table: pd.DataFrame) -> dict | None:
    """Request framing: servers as rows, the classes of malformed request as columns, each cell
    the MUSTs met of those it holds (with the checks broken, and the SHOULDs not followed, on hover)."""
    rows = framing_rows(table).fillna({"note": ""})
    if rows.empty:
        return None
    kinds = list(dict.fromkeys(rows["kind"]))
    panel = []
    for (_, server), checks in rows.groupby(["profile", "server"], sort=False):
        cells = [_framing_cell(checks[checks["kind"] == kind]) for kind in kinds]
        panel.append({"server": server, "cells": cells, "total": _framing_cell(checks)})
    return {"kinds": kinds, "rows": panel, "checks": rows["check"].nunique()}


def _framing_cell(checks: pd.DataFrame) -> dict:
    musts = checks[checks["requirement"] == "MUST"]
    broken = musts[~met_column(musts)]
    loose = checks[(checks["requirement"] != "MUST") & (checks["outcome"] == CheckOutcome.WARN)]
    desync = truth(broken["desynchronised"]).any()
    shown = pd.concat([broken, loose])
    title = "; ".join(f"{row.check}: {row.did}" for row in shown.itertuples())
    outcome = CheckOutcome.FAIL if len(broken) else (CheckOutcome.WARN if len(loose) else CheckOutcome.PASS)
    # A class with no MUST (a bare LF: MAY) shows what the server did instead of 0/0.
    text = f"{len(musts) - len(broken)}/{len(musts)}" if len(musts) else "/".join(sorted(set(checks["outcome"])))
    return {"text": text + (" ⚠" if desync else ""), "outcome": outcome, "title": title}


def _read(path: Path) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError):
        return None


def _matrix_tables(matrix: dict[str, dict]) -> list[Table]:
    """A table per language: servers as rows, checks as columns, each cell its outcome (its
    evidence on hover)."""
    return [
        Table(
            ("server", *found["checks"]),
            [
                (row["server"], *(Cell(c["outcome"], c["outcome"], c["note"]) for c in row["cells"]))
                for row in found["rows"]
            ],
            media=Medium.PAGE,
            classes="conformance",
            caption=language,
            headed=True,
        )
        for language, found in matrix.items()
    ]


def _framing_blocks(panel: dict, sentences: list[str]) -> list[Block]:
    """The request framing panel: its paragraph, its table (a class of request a column, the
    MUSTs met last), and the framing sentences under it."""
    explained = Paragraph(
        (
            "A server that reads a request's length differently from the proxy in front of it can be made to answer a "
            f"request hidden in another's body (request smuggling). Each server got {panel['checks']} malformed or "
            f"ambiguous requests in {len(panel['kinds'])} classes, each followed on the same connection by a marker "
            "request; a cell counts the MUSTs of RFC 9112 and RFC 9110 it met (⚠: desynchronised: a request hidden "
            "in a body was answered, or the marker was read as body). Hover a cell for what broke; ",
            Link(TABLE),
            " has every check with the RFC's words.",
        ),
        media=Medium.PAGE,
    )
    cells = [
        (row["server"], *(Cell(c["text"], c["outcome"], c["title"]) for c in [*row["cells"], row["total"]]))
        for row in panel["rows"]
    ]
    table = Table(
        ("server", *panel["kinds"], "MUSTs met"), cells, media=Medium.PAGE, classes="conformance framing", headed=True
    )
    return [explained, table, Sentences(sentences, media=Medium.PAGE)]


def http_section(conformance_csv: Path, verdicts_csv: Path) -> Section | None:
    """The section: the sentences the Answers list (a compared server failing what its
    counterpart passes; how each server reads a malformed request), and, closing the page, the
    matrix per language and the request framing panel with its sentences. None where the run
    probed no server (conformance.csv without rows)."""
    conformance = pd.read_csv(conformance_csv)
    verdicts = _read(verdicts_csv)
    protocol = protocol_differences(verdicts, conformance) if verdicts is not None else []
    framing = framing_sentences(conformance)
    matrix, panel = conformance_matrix(conformance), framing_panel(conformance)
    if not (matrix or panel or protocol or framing):
        return None
    answers = (
        Group(PROTOCOL, (Sentences(protocol),)),
        # On the page its sentences stand under the framing panel instead.
        Group(FRAMING_TITLE, (Sentences(framing),), media=Medium.MARKDOWN | Medium.CONSOLE),
    )
    blocks: list[Block] = []
    if matrix:
        explained = (
            "Each server of the run probed over raw sockets before its cells (",
            Link(TABLE),
            " has what was sent and what came back); a failed check never changes a req/s figure. "
            "Hover a cell for its evidence.",
        )
        blocks += [Paragraph(explained, media=Medium.PAGE), *_matrix_tables(matrix)]
    if panel and matrix:
        framed = tuple(_framing_blocks(panel, framing))
        blocks.append(Group(FRAMING_HEADING, framed, media=Medium.PAGE, anchor="request-framing"))
    elif panel:
        return Section(FRAMING_HEADING, _framing_blocks(panel, framing), anchor="request-framing", answers=answers)
    return Section(MATRIX_HEADING, blocks, anchor="conformance", answers=answers)
