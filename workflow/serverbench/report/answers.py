"""The Answers: a run's verdict sentences grouped for a reader (the page, and the
terminal when the workflow ends), decided ones first."""

from __future__ import annotations

import re

import pandas as pd

from serverbench.decide.conformance import protocol_differences
from serverbench.decide.pairs import LATENCY_KINDS

SKIPPED = re.compile(r"(\S+): skipped: ([^;]+)")


def answers(verdicts: pd.DataFrame, conformance: pd.DataFrame | None = None) -> dict[str, list[str]]:
    """The sentences, decided ones first: what the run can say, then what it cannot and
    why; servers that were not measured at all are named once, not in every comparison.
    Latency under load (rate cells) comes next, each server's knee first; last, the
    HTTP checks a compared server fails and its counterpart passes."""
    protocol = protocol_differences(verdicts, conformance) if conformance is not None else []
    is_latency = verdicts["kind"].isin(LATENCY_KINDS)
    latency, verdicts = verdicts[is_latency], verdicts[~is_latency]
    # p99 at each fraction is in verdicts.csv; the Answers keep those a test decided.
    latency = latency[(latency["kind"] != "p99 at fraction") | latency["verdict"].isin(["lower p99", "higher p99"])]
    decided = verdicts[verdicts["verdict"].isin(["faster", "slower"])]
    excluded = verdicts[verdicts["verdict"] == "not comparable"]
    why = excluded["why"].fillna("").astype(str)
    only_skipped = why.map(lambda text: bool(SKIPPED.search(text)) and not SKIPPED.sub("", text).strip("; "))
    only_skipped = only_skipped.astype(bool)  # an empty run leaves it untyped
    not_measured = sorted({f"{server} ({reason})" for text in why for server, reason in SKIPPED.findall(text)})
    return {
        "decided": decided["sentence"].tolist(),
        "equivalent": of(verdicts, "equivalent"),
        "undetermined": of(verdicts, "undetermined"),
        "described, not tested": of(verdicts, "not tested"),
        "not comparable": grouped_reasons(excluded[~only_skipped]),
        "not measured": not_measured,
        "latency under load": latency["sentence"].tolist(),
        "speaks HTTP differently": protocol,
    }


def headline(verdicts: pd.DataFrame) -> str:
    """One paragraph for "which language, and with which server?": the best of each
    language (described) and the same program serving both (tested), per condition."""
    rows = verdicts[verdicts["kind"].isin(["best of language", "same server"]) & verdicts["ratio"].notna()]
    return " ".join(rows.sort_values(["tool", "concurrency", "kind"])["sentence"])


def grouped_reasons(excluded: pd.DataFrame) -> list[str]:
    """One line per reason a comparison could not be made, listing the comparisons it stopped."""
    by_reason: dict[str, list[str]] = {}
    for row in excluded.itertuples():
        who = f"{row.a} against {row.b}" if isinstance(row.b, str) else "best of each language"
        where = f"{who} ({row.tool}, c={row.concurrency})"
        for reason in str(row.why or "not comparable").split("; "):
            by_reason.setdefault(reason, []).append(where)
    return [f"{reason}: {', '.join(dict.fromkeys(cells))}" for reason, cells in by_reason.items()]


def of(verdicts: pd.DataFrame, outcome: str) -> list[str]:
    return verdicts[verdicts["verdict"] == outcome]["sentence"].tolist()


def read_table(path) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError):
        return None


def print_answers(path, conformance_path=None) -> None:
    """The verdicts in the terminal when the workflow finishes."""
    verdicts = read_table(path)
    if verdicts is None:
        return
    print(f"\nserverbench: {len(verdicts)} comparisons ({path})")
    conformance = read_table(conformance_path) if conformance_path else None
    for title, sentences in answers(verdicts, conformance).items():
        title = {"not measured": "not measured here (every comparison with them left out)"}.get(title, title)
        if sentences:
            print(f"\n{title} ({len(sentences)}):")
            for text in sentences:
                print(f"  - {text}")
