"""Verdicts: for each declared comparison at each condition (profile,
workload, tool, concurrency), which server is faster and how sure we are.

A comparison is the ratio of median req/s (A/B) with its bootstrap interval,
a Mann-Whitney test, and Holm's correction across every comparison of the
run. Only comparable cells decide (``decide.comparability``); one that is not
makes its comparisons ``not comparable``, with the reason, and is never the
best of its language.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import pandas as pd

from serverbench.decide import stats
from serverbench.decide.comparability import why_not_comparable
from serverbench.decide.latency import latency_verdict, latency_verdicts
from serverbench.decide.pairs import LATENCY_KINDS, best_of_languages, declared_pairs
from serverbench.decide.sentences import latency_sentence, sentence
from serverbench.plan.languages import title

CONDITION = ["profile", "workload", "tool", "concurrency"]
VERDICT_COLUMNS = [
    "kind", *CONDITION, "fraction", "offered_rps", "a", "b", "language_a", "language_b", "n_a", "n_b",
    "median_a", "median_b",
    "ratio", "ci_low", "ci_high", "p_value", "p_holm", "verdict", "why", "sentence",
]  # fmt: skip
BEST_OF_LANGUAGE = "best of language"


@dataclass
class Measured:
    """One cell's repeats and whether they may decide anything."""

    server: str
    language: str
    concurrency: int
    rps: list[float]
    why_not: list[str] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        return not self.why_not


def measured_cells(runs: pd.DataFrame, summary: pd.DataFrame, excluded: set[str]) -> dict[tuple, dict[str, Measured]]:
    """Per condition, every server's cell."""
    keys = CONDITION + ["server"]
    repeats_of = {key: group for key, group in runs.groupby(keys, sort=False)}
    by_condition: dict[tuple, dict[str, Measured]] = {}
    for _, row in summary.iterrows():
        repeats = repeats_of.get(tuple(row[keys]), runs.iloc[:0])
        good = repeats[repeats["status"] == "ok"]["rps"].dropna().tolist()
        starved = repeats["starved_connections"].max() if repeats["starved_connections"].notna().any() else None
        why = why_not_comparable(row, excluded, None if starved is None else int(starved))
        cell = Measured(row["server"], row["language"], int(row["concurrency"]), good, why)
        by_condition.setdefault(tuple(row[CONDITION]), {})[row["server"]] = cell
    return by_condition


def judge(kind: str, condition: tuple, a: Measured, b: Measured, confidence: float, seed: int, why: str = "") -> dict:
    """One comparison, before Holm's correction decides the verdict."""
    row = dict(zip(CONDITION, condition, strict=True))
    row.update(kind=kind, a=a.server, b=b.server, language_a=a.language, language_b=b.language, why=why)
    reasons = [f"{cell.server}: {reason}" for cell in (a, b) for reason in cell.why_not]
    if reasons:
        return {**row, "verdict": "not comparable", "why": "; ".join(filter(None, [*reasons, why]))}
    return {**row, **stats.compare(a.rps, b.rps, confidence, seed).fields()}


def best_of_each_language(config: dict, condition: tuple, cells: dict[str, Measured]) -> list[dict]:
    """The best comparable server of one language against the best of another, for each two
    compared languages present at the condition (highest median req/s)."""
    confidence, seed = config["comparisons"]["confidence"], config["seed"]
    usable = {name: statistics.median(c.rps) for name, c in cells.items() if c.comparable and c.rps}
    rows = []
    for (first, second), best in best_of_languages(config, usable, list(cells)).items():
        members = [c for language in (first, second) for c in cells.values() if c.language == language]
        left_out = [f"{c.server} ({'; '.join(c.why_not)})" for c in members if not c.comparable]
        why = f"left out: {', '.join(left_out)}" if left_out else ""
        if None in best:
            missing = [title(config, lang) for lang, server in zip((first, second), best, strict=True) if not server]
            detail = f"no comparable {' or '.join(missing)} server" + (f"; {why}" if why else "")
            row = dict(zip(CONDITION, condition, strict=True))
            rows.append({**row, "kind": BEST_OF_LANGUAGE, "verdict": "not comparable", "why": detail})
            continue
        rows.append(judge(BEST_OF_LANGUAGE, condition, cells[best[0]], cells[best[1]], confidence, seed, why))
    return rows


def verdict_table(
    runs: pd.DataFrame, summary: pd.DataFrame, config: dict, latency: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Every declared comparison of a run, with verdicts after Holm's correction; where rate
    cells ran (``latency``, latency.csv), each server's knee and the pairs' latencies too."""
    spec = config["comparisons"]
    confidence, seed = spec["confidence"], config["seed"]
    rows = []
    for condition, cells in sorted(measured_cells(runs, summary, set(spec["not_comparable_flags"])).items()):
        for kind, a, b in declared_pairs(config, sorted(cells)):
            rows.append(judge(kind, condition, cells[a], cells[b], confidence, seed))
        if spec["best_of_language"]:
            rows += best_of_each_language(config, condition, cells)
    if latency is not None and not latency.empty:
        rows += latency_verdicts(latency, config)
    for row, adjusted in zip(rows, stats.holm([row.get("p_value") for row in rows]), strict=True):
        row["p_holm"] = adjusted
        if row["kind"] in LATENCY_KINDS:
            _decide_latency(row, confidence)
            continue
        if row.get("verdict") != "not comparable":
            row["verdict"], row["why"] = _verdict(row, 1 - confidence)
        row["sentence"] = sentence(row, confidence, config)
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _decide_latency(row: dict, confidence: float) -> None:
    if not row.get("verdict"):
        tested = row.get("p_value") is not None
        row["verdict"] = latency_verdict(row, 1 - confidence) if tested else "not tested"
    row["sentence"] = latency_sentence(row, confidence)


def _verdict(row: dict, alpha: float) -> tuple[str, str]:
    why = row.get("why") or ""
    decided = stats.verdict(row["ratio"], row["ci_low"], row["ci_high"], row["p_holm"], alpha)
    if decided != "no detectable difference":
        return decided, why
    n_a, n_b = row.get("n_a") or 0, row.get("n_b") or 0
    if stats.smallest_p(n_a, n_b) >= alpha:
        too_few = f"{n_a} against {n_b} repeats cannot show a difference at this confidence"
        why = "; ".join(filter(None, [why, too_few]))
    return "no detectable difference", why
