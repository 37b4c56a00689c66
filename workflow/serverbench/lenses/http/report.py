"""The HTTP lens's section: what it adds to the Answers (where a compared server fails an
HTTP check that the server it is compared with passes; how each server reads a malformed
request), the conformance matrix and the request framing panel that close the page, and its
markdown for answers.md. The checks never change a verdict; they say what a req/s figure does not."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from serverbench.decide.pairs import LATENCY_KINDS
from serverbench.lenses.http.record import CheckOutcome
from serverbench.record.conformance import met

# The titles of its sentences (the page's `h3`, answers.md's `##`).
PROTOCOL, FRAMING_TITLE = "Speaks HTTP differently", "Request framing"


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


def http_context(conformance_csv: Path, verdicts_csv: Path) -> dict | None:
    """The section: ``answers``, the sentences the page's Answers list under their title (a
    compared server failing what its counterpart passes); the framing sentences, under its
    panel; the matrix per language and the framing panel. None where the run probed no server
    (conformance.csv without rows)."""
    conformance = pd.read_csv(conformance_csv)
    verdicts = _read(verdicts_csv)
    protocol = protocol_differences(verdicts, conformance) if verdicts is not None else []
    context = {
        "answers": {PROTOCOL: protocol},
        "framing_sentences": framing_sentences(conformance),
        "matrix": conformance_matrix(conformance),
        "framing": framing_panel(conformance),
    }
    shown = context["matrix"] or context["framing"] or protocol or context["framing_sentences"]
    return context if shown else None


def http_markdown(context: dict) -> str:
    """answers.md: its sentences as the Answers' last sections, each after a blank line (they
    follow the timed answers' last list)."""
    sections = {**context["answers"], FRAMING_TITLE: context["framing_sentences"]}
    blocks = [
        "\n".join(["", f"## {title}", "", *(f"- {text}" for text in sentences), ""])
        for title, sentences in sections.items()
        if sentences
    ]
    return "".join(blocks)


def print_http(conformance_csv: Path, verdicts_csv: Path) -> None:
    """Its sentences at the end of a run, after the timed answers' (as they read in answers.md),
    where the run has its verdicts."""
    conformance, verdicts = _read(conformance_csv), _read(verdicts_csv)
    if conformance is None or verdicts is None:
        return
    found = {PROTOCOL: protocol_differences(verdicts, conformance), FRAMING_TITLE: framing_sentences(conformance)}
    for title, sentences in found.items():
        if sentences:
            print(f"\n{title[0].lower()}{title[1:]} ({len(sentences)}):")
            for text in sentences:
                print(f"  - {text}")
