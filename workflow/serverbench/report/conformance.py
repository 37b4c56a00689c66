"""What the conformance matrix adds to the Answers: where a compared server
fails an HTTP check that the server it is compared with passes. The checks
never change a verdict; they say what a req/s figure does not."""

from __future__ import annotations

import pandas as pd

from serverbench.decide.pairs import LATENCY_KINDS
from serverbench.record.conformance import met


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
                if outcome == "fail" and theirs.get(check, ("",))[0] == "pass"
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
        took = checks[(checks["requirement"] == "SHOULD") & (checks["outcome"] == "warn")]
        if broken.empty:
            text = f"{server} met all {len(musts)} MUSTs of RFC 9112/9110 on request framing"
        else:
            named = ", ".join(f"{row.check} ({_in_brief(row)})" for row in broken.head(3).itertuples())
            more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
            which = "among them" if len(broken) > 1 else "the one broken:"
            silent = int((broken["outcome"] == "warn").sum())
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
