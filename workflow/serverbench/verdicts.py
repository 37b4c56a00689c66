"""Verdicts: for each declared comparison at each condition (profile,
workload, tool, concurrency), which server is faster and how sure we are.

A comparison is the ratio of median req/s (A/B) with its bootstrap interval,
a Mann-Whitney test, and Holm's correction across every comparison of the
run. Only comparable numbers decide: a cell that failed, has fewer than two
good repeats, or carries a flag from ``comparisons.not_comparable_flags`` is
``not comparable``, with the reason, and is never the best of its language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import product

import pandas as pd

from serverbench import stats
from serverbench.latency import LATENCY_KINDS, latency_sentence, latency_verdict, latency_verdicts

CONDITION = ["profile", "workload", "tool", "concurrency"]
VERDICT_COLUMNS = [
    "kind", *CONDITION, "fraction", "offered_rps", "a", "b", "language_a", "language_b", "n_a", "n_b",
    "median_a", "median_b",
    "ratio", "ci_low", "ci_high", "p_value", "p_holm", "verdict", "why", "sentence",
]  # fmt: skip
LANGUAGE_NAMES = {"python": "Python", "perl": "Perl", "none": "no app"}


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


def flag_set(value) -> set[str]:
    """The flags of a table cell ("a;b;c"), empty where there are none."""
    return {flag for flag in str(value).split(";") if flag} if pd.notna(value) else set()


def why_not_comparable(row, excluded: set[str], starved_connections: int | None = None) -> list[str]:
    """Why a summary row's figure may decide nothing (none: it may). It failed or was skipped,
    has fewer than 2 good repeats, or carries a flag from ``excluded``; the one rule for the
    verdicts, ``serverbench compare`` and the charts."""
    reasons = []
    if row["status"] not in ("ok", "partial"):
        reasons.append(f"{row['status']}: {row['reason']}")
    elif row["repeats_ok"] < 2:
        reasons.append(f"only {row['repeats_ok']} successful repeat")
    for flag in sorted(flag_set(row["flags"]) & excluded):
        if flag == "starved" and starved_connections is not None:
            reasons.append(f"starved: {starved_connections} of {row['concurrency']} connections got (almost) no answer")
        else:
            reasons.append(flag)
    return reasons


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


def declared_pairs(config: dict, servers: list[str]) -> list[tuple[str, str, str]]:
    """(kind, a, b) for the servers present at one condition, as ``comparisons`` declares."""
    spec, catalogue = config["comparisons"], config["catalogue"]
    python = [s for s in servers if catalogue[s]["language"] == "python"]
    perl = [s for s in servers if catalogue[s]["language"] == "perl"]
    pairs = []
    for a, b in product(python, perl):
        same_product = catalogue[a].get("product") and catalogue[a].get("product") == catalogue[b].get("product")
        same_family = catalogue[a].get("family") and catalogue[a].get("family") == catalogue[b].get("family")
        if spec["same_server"] and same_product:
            pairs.append(("same server", a, b))
        elif spec["families"] and same_family:
            pairs.append(("family", a, b))
    pairs += [("named", a, b) for a, b in spec["pairs"] if a in servers and b in servers]
    ceiling = spec["ceiling"]
    if ceiling in servers:
        pairs += [("ceiling", server, ceiling) for server in servers if server != ceiling]
    return pairs


def judge(kind: str, condition: tuple, a: Measured, b: Measured, confidence: float, seed: int, why: str = "") -> dict:
    """One comparison, before Holm's correction decides the verdict."""
    row = dict(zip(CONDITION, condition, strict=True))
    row.update(kind=kind, a=a.server, b=b.server, language_a=a.language, language_b=b.language, why=why)
    reasons = [f"{cell.server}: {reason}" for cell in (a, b) for reason in cell.why_not]
    if reasons:
        return {**row, "verdict": "not comparable", "why": "; ".join(filter(None, [*reasons, why]))}
    result = stats.compare(a.rps, b.rps, confidence, seed)
    row.update(
        n_a=result.n_a, n_b=result.n_b, median_a=result.median_a, median_b=result.median_b, ratio=result.ratio,
        ci_low=result.ci_low, ci_high=result.ci_high, p_value=result.p_value,
    )  # fmt: skip
    return row


def best_of_languages(condition: tuple, cells: dict[str, Measured], confidence: float, seed: int) -> dict | None:
    """The best comparable Python server against the best comparable Perl server."""
    best, left_out = {}, []
    for language in ("python", "perl"):
        members = [c for c in cells.values() if c.language == language]
        usable = [c for c in members if c.comparable and c.rps]
        left_out += [f"{c.server} ({'; '.join(c.why_not)})" for c in members if not c.comparable]
        if usable:
            best[language] = max(usable, key=lambda c: pd.Series(c.rps).median())
    if not any(c.language == "python" for c in cells.values()) or not any(c.language == "perl" for c in cells.values()):
        return None
    why = f"left out: {', '.join(left_out)}" if left_out else ""
    if len(best) < 2:
        missing = [LANGUAGE_NAMES[lang] for lang in ("python", "perl") if lang not in best]
        row = dict(zip(CONDITION, condition, strict=True))
        detail = f"no comparable {' or '.join(missing)} server" + (f"; {why}" if why else "")
        return {**row, "kind": "best of language", "verdict": "not comparable", "why": detail}
    return judge("best of language", condition, best["python"], best["perl"], confidence, seed, why)


def decide(
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
            best = best_of_languages(condition, cells, confidence, seed)
            rows.append(best) if best else None
    if latency is not None and not latency.empty:
        rows += latency_verdicts(latency, config, lambda servers: declared_pairs(config, servers))
    for row, adjusted in zip(rows, stats.holm([row.get("p_value") for row in rows]), strict=True):
        row["p_holm"] = adjusted
        if row["kind"] in LATENCY_KINDS:
            _decide_latency(row, confidence)
            continue
        if row.get("verdict") != "not comparable":
            row["verdict"], row["why"] = _verdict(row, 1 - confidence)
        row["sentence"] = sentence(row, confidence)
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


def _who(server: str, language: str) -> str:
    return f"{server} ({LANGUAGE_NAMES.get(language, language)})"


def _claim(row: dict, interval: str) -> str:
    """What the ratio says, in the words of the comparison's kind."""
    a, b, times = row["a"], row["b"], f"{row['ratio']:.2f}×"
    if row["kind"] == "ceiling":
        return f"{a} reaches {row['ratio']:.0%} of {b}'s requests/s ({interval})"
    if row["kind"] == "best of language":
        return f"the best Python server, {a}, serves {times} the requests/s of the best Perl server, {b} ({interval})"
    if row["kind"] == "same server":
        return f"{a} serves Python at {times} the requests/s the same server ({b}) serves Perl ({interval})"
    return f"{_who(a, row['language_a'])} serves {times} the requests/s of {_who(b, row['language_b'])} ({interval})"


def sentence(row: dict, confidence: float) -> str:
    """The verdict in plain words: where, what, how sure, and why not when it cannot say."""
    where = f"Under {row['tool']} at {row['concurrency']} connections"
    why = f" ({row['why']})" if row.get("why") else ""
    if row["verdict"] == "not comparable":
        if not row.get("a"):
            return f"{where}, best of each language: not comparable, {row['why']}"
        return f"{where}, {row['a']} against {row['b']}: not comparable, {row['why']}"
    interval = f"{confidence:.0%} CI {row['ci_low']:.2f}–{row['ci_high']:.2f}"
    if row["kind"] == "ceiling":
        interval = f"{confidence:.0%} CI {row['ci_low']:.0%}–{row['ci_high']:.0%}"
    return f"{where}, {_claim(row, interval)}: {row['verdict']}{why}"


SKIPPED = re.compile(r"(\S+): skipped: ([^;]+)")


def answers(verdicts: pd.DataFrame) -> dict[str, list[str]]:
    """The sentences, decided ones first: what the run can say, then what it cannot and
    why; servers that were not measured at all are named once, not in every comparison.
    Latency under load (rate cells) comes last, each server's knee first."""
    is_latency = verdicts["kind"].isin(LATENCY_KINDS)
    latency, verdicts = verdicts[is_latency], verdicts[~is_latency]
    # p99 at each fraction is in verdicts.csv; the Answers keep those a test decided.
    latency = latency[(latency["kind"] != "p99 at fraction") | latency["verdict"].isin(["lower p99", "higher p99"])]
    decided = verdicts[verdicts["verdict"].isin(["faster", "slower"])]
    undecided = verdicts[verdicts["verdict"] == "no detectable difference"]
    excluded = verdicts[verdicts["verdict"] == "not comparable"]
    why = excluded["why"].fillna("").astype(str)
    only_skipped = why.map(lambda text: bool(SKIPPED.search(text)) and not SKIPPED.sub("", text).strip("; "))
    only_skipped = only_skipped.astype(bool)  # an empty run leaves it untyped
    not_measured = sorted({f"{server} ({reason})" for text in why for server, reason in SKIPPED.findall(text)})
    return {
        "decided": decided["sentence"].tolist(),
        "no detectable difference": undecided["sentence"].tolist(),
        "not comparable": excluded[~only_skipped]["sentence"].tolist(),
        "not measured": not_measured,
        "latency under load": latency["sentence"].tolist(),
    }


def print_answers(path) -> None:
    """The verdicts in the terminal when the workflow finishes."""
    try:
        verdicts = pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError):
        return
    print(f"\nserverbench: {len(verdicts)} comparisons ({path})")
    for title, sentences in answers(verdicts).items():
        title = {"not measured": "not measured here (every comparison with them left out)"}.get(title, title)
        if sentences:
            print(f"\n{title} ({len(sentences)}):")
            for text in sentences:
                print(f"  - {text}")
