"""The Answers: a run's verdict sentences grouped for a reader (the page, and the
terminal when the workflow ends), decided ones first."""

from __future__ import annotations

import json

import pandas as pd

from serverbench.decide.margins import in_words, run_margins
from serverbench.decide.pairs import FAIRNESS, LATENCY_KINDS
from serverbench.lens import Lead
from serverbench.record.vocabulary import Kind, Outcome
from serverbench.report.panels import where_of
from serverbench.report.sentences import confidence_label

FACT_COLUMNS = ("not_measured", "only_not_measured", "left_out")


def _pairs(cell) -> list[list[str]]:
    """A verdict row's [server, reason] pairs (``not_measured``, ``left_out``: JSON), none where empty."""
    return json.loads(cell) if isinstance(cell, str) and cell else []


def _true(cell) -> bool:
    """A boolean column as read back from CSV (True, "True", or empty)."""
    return cell is True or str(cell) == "True"


def answers(verdicts: pd.DataFrame) -> dict[str, list[str]]:
    """The sentences, decided ones first: what the run can say, then what it cannot and
    why; servers that were not measured at all are named once, not in every comparison.
    Latency under load (rate cells) comes last, each server's knee first (the HTTP checks'
    sentences follow, from their lens: Place.CLOSING)."""
    # A verdicts.csv written before these facts were columns: none of them.
    verdicts = verdicts.assign(**{name: None for name in FACT_COLUMNS if name not in verdicts})
    is_latency = verdicts["kind"].isin(LATENCY_KINDS)
    latency, verdicts = verdicts[is_latency], verdicts[~is_latency]
    waiting = verdicts[verdicts["kind"] == FAIRNESS]
    verdicts = verdicts[verdicts["kind"] != FAIRNESS]
    # p99 at each fraction is in verdicts.csv; the Answers keep those a test decided.
    latency = latency[
        (latency["kind"] != Kind.P99_AT_FRACTION) | latency["outcome"].isin([Outcome.LOWER_P99, Outcome.HIGHER_P99])
    ]
    decided = verdicts[verdicts["outcome"].isin([Outcome.FASTER, Outcome.SLOWER])]
    excluded = verdicts[verdicts["outcome"] == Outcome.NOT_COMPARABLE]
    only_skipped = excluded["only_not_measured"].map(_true).astype(bool)  # an empty run leaves it untyped
    not_measured = sorted(
        {f"{server} ({reason})" for pairs in excluded["not_measured"] for server, reason in _pairs(pairs)}
    )
    return {
        "decided": decided["sentence"].tolist(),
        "equivalent": of(verdicts, Outcome.EQUIVALENT),
        "undetermined": of(verdicts, Outcome.UNDETERMINED),
        "described, not tested": of(verdicts, Outcome.NOT_TESTED),
        "not comparable": grouped_reasons(excluded[~only_skipped]),
        "not measured": not_measured,
        "connections kept waiting": waiting.sort_values("outcome", key=_fairness_order)["sentence"].tolist(),
        "latency under load": latency["sentence"].tolist(),
    }


def _fairness_order(verdicts: pd.Series) -> pd.Series:
    """Decided fairness first (fairer, less fair), then equivalent, then undetermined."""
    return verdicts.map({Outcome.FAIRER: 0, Outcome.LESS_FAIR: 0, Outcome.EQUIVALENT: 1}).fillna(2)


def headline(verdicts: pd.DataFrame, titles: dict[str, str] | None = None) -> str:
    """One paragraph for "which language, and with which server?", per condition (and per
    profile and workload, where a run has several): what
    the same program serving both languages shows (tested), then which server led in
    each language (described: chosen after seeing the data). ``titles`` names languages."""
    rows = verdicts[verdicts["kind"].isin([Kind.BEST_OF_LANGUAGE, Kind.SAME_SERVER])]
    # A run of several profiles or workloads answers for each: "(json)", "(apps-flask · db)".
    rows = rows.assign(scope=where_of(rows).str.removesuffix(", "))
    parts = []
    for (scope, tool, concurrency), condition in rows.groupby(["scope", "tool", "concurrency"], sort=True):
        clauses = [_same_server_clause(condition, titles or {}), _best_clause(condition, titles or {})]
        text = "; ".join(clause for clause in clauses if clause)
        if text:
            parts.append(f"With {tool} at {concurrency} connections{f' ({scope})' if scope else ''}, {text}.")
    return " ".join(parts)


def _title(titles: dict[str, str], language) -> str:
    return titles.get(language) or str(language).capitalize()


def _same_server_clause(condition: pd.DataFrame, titles: dict[str, str]) -> str:
    """What the servers that serve both languages say about the language alone: each
    outcome once, naming the servers that gave it, then every pair's ratio and interval."""
    same = condition[(condition["kind"] == Kind.SAME_SERVER) & condition["ratio"].notna()]
    if same.empty:
        return ""
    first, second = _title(titles, same["language_a"].iloc[0]), _title(titles, same["language_b"].iloc[0])
    pairs = ", ".join(
        f"{row.a}/{row.b} {row.ratio:.2f}× ({confidence_label(row.level)} CI {row.ci_low:.2f}–{row.ci_high:.2f})"
        for row in same.itertuples()
    )
    findings = []
    for verdict, rows in same.groupby("outcome", sort=False):
        where = "" if len(rows) == len(same) else " on " + " and ".join(f"{row.a}/{row.b}" for row in rows.itertuples())
        if verdict == Outcome.UNDETERMINED:
            finest = rows["detectable_ratio"].min()
            findings.append(
                f"this run cannot tell {first} from {second}{where} (it could have told a ratio beyond {finest:.2f}×)"
            )
        elif verdict == Outcome.EQUIVALENT:
            findings.append(f"{first} and {second} are equivalent within ±{rows['margin'].iloc[0]:.0%}{where}")
        elif verdict in (Outcome.FASTER, Outcome.SLOWER):
            findings.extend(f"{row.a} serves {first} {verdict} than {second}" for row in rows.itertuples())
    return f"on the same server {'; '.join(findings)}: {pairs}"


def _best_clause(condition: pd.DataFrame, titles: dict[str, str]) -> str:
    """Which server led each language (a description, not a test), and who was left out."""
    best = condition[(condition["kind"] == Kind.BEST_OF_LANGUAGE) & condition["ratio"].notna()]
    if best.empty:
        return ""
    row = best.iloc[0]
    first, second = _title(titles, row["language_a"]), _title(titles, row["language_b"])
    text = (
        f"the fastest {first} server was {row['a']} and the fastest {second} server {row['b']}, "
        f"{row['a']} at {row['ratio']:.2f}× {row['b']}'s requests per second (described, not tested"
    )
    left_out = _pairs(row.get("left_out"))
    if left_out:
        text += "; left out: " + ", ".join(f"{server} ({reason})" for server, reason in left_out)
    return text + ")"


def grouped_reasons(excluded: pd.DataFrame) -> list[str]:
    """One line per reason a comparison could not be made, listing the comparisons it stopped."""
    by_reason: dict[str, list[str]] = {}
    for row in excluded.itertuples():
        who = f"{row.a} against {row.b}" if isinstance(row.b, str) else "best of each language"
        where = f"{who} ({row.tool}, c={row.concurrency})"
        for reason in _reason_texts(row):
            by_reason.setdefault(reason, []).append(where)
    return [f"{reason}: {', '.join(dict.fromkeys(cells))}" for reason, cells in by_reason.items()]


def _reason_texts(row) -> list[str]:
    """A comparison's reasons one by one (its ``reasons`` column); a table written before that
    column holds its joined words only, taken whole."""
    texts = _pairs(getattr(row, "reasons", None))
    return texts or [str(row.why) if isinstance(row.why, str) and row.why else Outcome.NOT_COMPARABLE.value]


def of(verdicts: pd.DataFrame, outcome: str) -> list[str]:
    return verdicts[verdicts["outcome"] == outcome]["sentence"].tolist()


def read_table(path) -> pd.DataFrame | None:
    try:
        return pd.read_csv(path)
    except (OSError, pd.errors.EmptyDataError):
        return None


# What the terminal prints as sentences after the comparisons' lines (the rest are lines).
SENTENCE_SECTIONS = (
    "not comparable",
    "not measured",
    "latency under load",
)
CONSOLE_ORDER = {
    Outcome.FASTER: 0,
    Outcome.SLOWER: 0,
    Outcome.FAIRER: 1,
    Outcome.LESS_FAIR: 1,
    Outcome.EQUIVALENT: 2,
    Outcome.UNDETERMINED: 3,
}


def console_line(row: pd.Series) -> str:
    """One timed comparison on one line, hyperfine's way: the ratio and its interval, against
    whom, the outcome, and what the run could have told (the condition is its group's header)."""
    what = "as evenly as" if row["kind"] == FAIRNESS else "against"
    figure = f"{row['ratio']:.2f}× [{row['ci_low']:.2f}–{row['ci_high']:.2f}]"
    line = f"{row['a']}: {figure} {what} {row['b']} ({row['kind']}) — {row['outcome']}"
    if row["outcome"] == Outcome.UNDETERMINED and pd.notna(row.get("detectable_ratio")):
        needed = row.get("rounds_needed")
        rounds = f"; about {needed:.0f} rounds would decide it" if pd.notna(needed) else ""
        line += f" (could tell {row['detectable_ratio']:.2f}×{rounds})"
    return line


def console_groups(verdicts: pd.DataFrame) -> dict[str, list[str]]:
    """The comparisons with an interval, one line each, under their condition named once."""
    shown = verdicts[~verdicts["kind"].isin(LATENCY_KINDS) & verdicts["ci_low"].notna()]
    shown = shown.assign(order=shown["outcome"].map(CONSOLE_ORDER).fillna(4)).sort_values("order", kind="stable")
    groups: dict[str, list[str]] = {}
    for (profile, workload, tool, concurrency), rows in shown.groupby(
        ["profile", "workload", "tool", "concurrency"], sort=True
    ):
        header = f"{profile}, {workload}, {tool} at {concurrency} connections"
        groups[header] = [console_line(row) for _, row in rows.iterrows()]
    return groups


def print_answers(path) -> None:
    """The verdicts in the terminal when the workflow finishes: each condition named once,
    then a line per comparison; then, in sentences, what could not be compared and why."""
    verdicts = read_table(path)
    if verdicts is None:
        return
    print(f"\nserverbench: {len(verdicts)} comparisons ({path}; in sentences: answers.md)")
    margins = margin_sentence(verdicts)
    if margins:
        print(margins)
    for header, lines in console_groups(verdicts).items():
        print(f"\n{header}:")
        for line in lines:
            print(f"  {line}")
    for title, sentences in answers(verdicts).items():
        if title not in SENTENCE_SECTIONS or not sentences:
            continue
        title = {"not measured": "not measured here (every comparison with them left out)"}.get(title, title)
        print(f"\n{title} ({len(sentences)}):")
        for text in sentences:
            print(f"  - {text}")


def margin_sentence(verdicts: pd.DataFrame) -> str:
    """What *equivalent*, *faster* and *slower* mean in this run, in words."""
    margins = run_margins(verdicts)
    if not margins:
        return ""
    if len(margins) == 1:
        return f"Equivalent means {in_words(margins[0])}; faster and slower mean by more than {margins[0] * 100:.3g}%."
    kinds = verdicts.dropna(subset=["margin"]).groupby("margin")["kind"].unique()
    parts = [f"{in_words(m)} for {', '.join(sorted(kinds[m]))} comparisons" for m in margins]
    return f"Equivalent means {'; '.join(parts)}; faster and slower mean by more than that margin."


# The page's table of every comparison: grouped by kind, decided ones first in each.
OUTCOME_ORDER = [Outcome.FASTER, Outcome.SLOWER, Outcome.FAIRER, Outcome.LESS_FAIR, Outcome.LOWER_P99,
                 Outcome.HIGHER_P99, Outcome.EQUIVALENT, Outcome.UNDETERMINED, Outcome.NOT_TESTED,
                 Outcome.NOT_COMPARABLE]  # fmt: skip
COMPARISON_COLUMNS = ["kind", "pair", "languages", "condition", "ratio (interval, level)", "outcome", "detectable",
                      "reason"]  # fmt: skip


def comparison_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Every comparison in one row each: pair, languages, condition, ratio with its interval,
    outcome, the smallest ratio the run could have told, and the reason where there is one."""
    kinds = list(dict.fromkeys(verdicts["kind"]))
    rank = {outcome: i for i, outcome in enumerate(OUTCOME_ORDER)}
    ordered = verdicts.assign(
        scope=where_of(verdicts),  # profile and workload, where the run has several
        _kind=verdicts["kind"].map(kinds.index),
        _outcome=verdicts["outcome"].map(rank).fillna(len(rank)),
    ).sort_values(["_kind", "_outcome"], kind="stable")
    rows = [
        [
            row.kind,
            _pair(row),
            _languages(row),
            _condition(row),
            _ratio(row),
            row.outcome,
            f"{row.detectable_ratio:.3g}×" if pd.notna(row.detectable_ratio) else "",
            row.why if isinstance(row.why, str) else "",
        ]
        for row in ordered.itertuples()
    ]
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def _pair(row) -> str:
    return f"{row.a} / {row.b}" if isinstance(row.a, str) and isinstance(row.b, str) else "best of each language"


def _languages(row) -> str:
    # A server of no language (nginx answering by itself) is not named as one.
    named = [str(language) for language in (row.language_a, row.language_b) if isinstance(language, str)]
    return " / ".join(language for language in named if language != "none")


def _condition(row) -> str:
    """Under what load; ``row.scope`` names the profile and workload where the run has several."""
    at = "" if pd.isna(row.fraction) else f" at {row.fraction:g} of capacity"
    return f"{row.scope}{row.tool} c={row.concurrency}{at}"


def _ratio(row) -> str:
    if pd.isna(row.ratio):
        return ""
    if pd.isna(row.ci_low) or pd.isna(row.ci_high):
        return f"{row.ratio:.2f}×"
    return f"{row.ratio:.2f}× ({row.ci_low:.2f}–{row.ci_high:.2f}, {confidence_label(row.level)})".replace("inf", "∞")


def lead_paragraph(timed: str, lead: Lead | None) -> str:
    """The Answers' first paragraph: a lens's decided sentences first (the work lens's), then what
    time could and could not tell (``headline``), then what the lens could not tell."""
    if not lead:
        return timed
    by_time = f"By time (requests per second under load), {timed[0].lower()}{timed[1:]}" if timed else ""
    return " ".join(part for part in (*lead.decided, by_time, *lead.undecided) if part)


def counts_sentence(verdicts: pd.DataFrame) -> str:
    """How many comparisons the run made and how each came out, in one sentence."""
    if verdicts.empty:
        return ""
    counts = verdicts["outcome"].value_counts()
    parts = [f"{counts[outcome]} {outcome}" for outcome in OUTCOME_ORDER if outcome in counts]
    return (
        f"This run made {len(verdicts)} comparisons: {', '.join(parts)}. The forest plot draws each "
        "one with an interval; the table lists them all (click a column to sort)."
    )


def answers_markdown(verdicts: pd.DataFrame, titles=None, lead=None) -> str:
    """answers.md: the headline (``lead``: the page's, reading every lens), the margin in
    words, then every section's sentences."""
    lines = ["# Answers", ""]
    for paragraph in (headline(verdicts, titles) if lead is None else lead, margin_sentence(verdicts)):
        if paragraph:
            lines += [paragraph, ""]
    for section, sentences in answers(verdicts).items():
        if sentences:
            lines += [f"## {section[0].upper()}{section[1:]}", "", *(f"- {text}" for text in sentences), ""]
    return "\n".join(lines)
