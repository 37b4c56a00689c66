"""conformance.csv: a row per (profile, server, check) with its outcome and
evidence, from the conformance jobs' results. A server that could not be
probed has a row, check ``probe``, outcome ``fail``, with the reason (and the
checks that ran before it broke)."""

from __future__ import annotations

import pandas as pd

from serverbench import files
from serverbench.lenses.http.record import CheckOutcome
from serverbench.record.conformance import met
from serverbench.record.vocabulary import Status

# group, kind and requirement: a request framing check's group, its class, and the RFC's word it
# rests on (MUST, SHOULD, MAY); empty for the other checks and in conformance/1 results.
# did, reading, words, desynchronised, met: a framing check's facts as fields (conformance/3); met is
# serverbench.record.conformance's one rule, derived here for older results that lack it.
CONFORMANCE_COLUMNS = [
    "profile",
    "server",
    "language",
    "check",
    "outcome",
    "note",
    "sent",
    "received",
    "group",
    "kind",
    "requirement",
    "did",
    "reading",
    "words",
    "desynchronised",
    "met",
]


def _read_check(check: dict) -> dict:
    """A result's check with its outcome read back as the member its word names (an unknown word
    refused), and ``met`` where it rests on a requirement (older results: from its outcome)."""
    check = {**check, "outcome": CheckOutcome(check["outcome"])}
    if check.get("requirement") and check.get("met") is None:
        return {**check, "met": met(check["outcome"])}
    return check


def conformance_rows(paths) -> pd.DataFrame:
    rows = []
    for path in sorted(map(str, paths)):
        result = files.read_json(path)
        where = {key: result[key] for key in ("profile", "server", "language")}
        if result["status"] == Status.SKIPPED:
            continue
        if result["status"] != Status.OK:
            rows.append({**where, "check": "probe", "outcome": CheckOutcome.FAIL, "note": result["reason"]})
        rows.extend({**where, **_read_check(check)} for check in result["checks"])
        for finding in result.get("lint_findings") or []:
            note = f"{finding.get('request', 'GET /')}: {finding['level']}: {finding['note']}"
            rows.append({**where, "check": "httplint", "outcome": CheckOutcome.INFO, "note": note})
    return pd.DataFrame(rows, columns=CONFORMANCE_COLUMNS)


def write_conformance(paths, csv_path) -> pd.DataFrame:
    table = conformance_rows(paths)
    files.write_atomic(csv_path, table.to_csv(index=False))
    return table
