"""What the conformance matrix adds to the Answers: where a compared server
fails an HTTP check that the server it is compared with passes. The checks
never change a verdict; they say what a req/s figure does not."""

from __future__ import annotations

import pandas as pd

from serverbench.decide.pairs import LATENCY_KINDS


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
    by_server = outcomes(conformance)
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
