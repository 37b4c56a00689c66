"""The work lens on the page and in answers.md: why work is not speed, one
sentence per comparison with the timed lens's word beside it, and a table of
every server's work per request, its instructions stacked by where they ran.

Everything is read from work.csv, work_detail.csv and work_verdicts.csv (which
has the timed comparison of the same pair beside each) as fields.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from serverbench.lens import WRITTEN, Group, Lead, Link, Medium, Paragraph, Section, Sentences, Template
from serverbench.record.vocabulary import DECIDED, KIND_ORDER, Kind, Outcome, Status
from serverbench.tables.columns import WORK_CONDITION as CONDITION

WHY_NOT_SPEED = (
    "Work is what a server does per request, counted rather than timed: user-space instructions under "
    "valgrind and syscalls under perf, the same on a quiet machine or a noisy one. It is not speed: time "
    "also goes to the kernel, to instructions that take more or fewer cycles (caches, branches) and to "
    "waiting, so the timed comparisons stay beside it."
)
# Same-server pairs (one program, two languages) first: the question the lens answers best.
# Stacked bar colours by class of object (any other class is grey).
CLASS_COLOURS = {
    "interpreter": "#4c78a8",
    "server": "#f58518",
    "libc": "#54a24b",
    "extensions": "#b279a2",
    "unnamed code (vDSO, generated)": "#9d755d",
}


def _timed(row: pd.Series) -> str:
    """What the timed lens said of the same pair (work_verdicts.csv's timed_* fields)."""
    if not isinstance(row.get("timed_at"), str):
        return ""
    where = row["timed_at"]
    if row["timed_outcome"] in (Outcome.FASTER, Outcome.SLOWER, Outcome.EQUIVALENT):
        return f"; timed at {where} it was {row['timed_outcome']} ({row['timed_ratio']:.2f}×)"
    if pd.notna(row.get("timed_detectable_ratio")):
        return (
            f"; this run's timing at {where} could not tell their speeds apart "
            f"(it could have told {row['timed_detectable_ratio']:.2f}×)"
        )
    return f"; timed at {where}: {row['timed_outcome']}"


def sentence(row: pd.Series) -> str:
    """One work comparison in words, with the timed lens's word beside it."""
    if pd.isna(row["ratio"]):
        return f"{row['a']} against {row['b']} ({row['kind']}): not compared on work ({row['why']})."
    half = math.log(row["ci_high"] / row["ratio"])
    syscalls = ""
    if pd.notna(row.get("a_syscalls")) and pd.notna(row.get("b_syscalls")):
        syscalls = f" and {row['a_syscalls']:.2f} syscalls per request against {row['b_syscalls']:.2f}"
    return (
        f"{row['a']} does {row['ratio']:.3f}× the user-space instructions per request of {row['b']} "
        f"({row['a_value']:,.0f} against {row['b_value']:,.0f}, ±{half:.2%}: {row['outcome']})"
        f"{syscalls}{_timed(row)}."
    )


def work_sentences(work_verdicts: pd.DataFrame | None) -> list[str]:
    if work_verdicts is None or work_verdicts.empty:
        return []
    ordered = work_verdicts.assign(_order=work_verdicts["kind"].map(KIND_ORDER).fillna(9)).sort_values(
        ["_order", "a", "b"], kind="stable"
    )
    return [sentence(row) for _, row in ordered.iterrows()]


def _bar(classes: pd.Series) -> list[dict]:
    """Segments of one server's bar: each class's share of its instructions (%), value, colour.
    The bar is the server's own composition; its total stands beside it (one scale for all
    would leave a light server a sliver beside gunicorn's 600k)."""
    shown = classes[classes > 0]
    total = float(shown.sum())
    return [
        {
            "name": name,
            "width": round(100 * value / total, 2),
            "value": f"{value:,.0f}",
            "colour": CLASS_COLOURS.get(name, "#bab0ac"),
        }
        for name, value in shown.items()
        if total > 0
    ]


def _collector(value) -> str:
    """The cyclic collector's instructions per request, apart ("" where it did none, or a run
    before it was counted apart)."""
    return f"{value:+,.0f}" if pd.notna(value) and round(value) != 0 else ""


def work_rows(work: pd.DataFrame, detail: pd.DataFrame, pairs_first: list[str]) -> list[dict]:
    """A row per server and condition (profile, workload): its figures, and its instructions
    stacked by class of object. Where the run counted several conditions (the apps profile's
    apps, several workloads), each row says which (``where``) and they come condition by
    condition."""
    classes = detail[detail["kind"] == "class"]
    order = {server: n for n, server in enumerate(pairs_first)}
    several = len(work[CONDITION].drop_duplicates()) > 1
    rows = []
    for _, row in work.sort_values("server").iterrows():
        mine = classes[(classes[CONDITION + ["server"]] == row[CONDITION + ["server"]]).all(axis=1)]
        figures = {
            "server": row["server"],
            "profile": row["profile"],
            "workload": row["workload"],
            "where": f"{row['profile']}, {row['workload']}" if several else "",
            "status": row["status"],
            "reason": row["reason"] if isinstance(row["reason"], str) else "",
            "order": order.get(row["server"], len(order)),
        }
        if row["status"] == Status.OK:
            figures.update(
                instructions=f"{row['instructions_per_request']:,.0f}",
                collector=_collector(row.get("collector_instructions_per_request")),
                syscalls=f"{row['syscalls_per_request']:.2f}",
                switches=f"{row['context_switches_per_request']:.2f}",
                cpu=f"{row['cpu_us_per_request']:.0f}" if pd.notna(row.get("cpu_us_per_request")) else "",
                bar=_bar(mine.set_index("name")["per_request"]),
            )
        rows.append(figures)
    return sorted(rows, key=lambda f: (f["profile"], f["workload"], f["order"], f["server"]))


TITLE = "Work per request"


def work_section(work_csv, detail_csv, work_verdicts_csv, margin: float = 0.005, titles=None) -> Section | None:
    """The section "Work per request", or None where the run counted no work."""
    if not work_csv:
        return None
    work, detail = pd.read_csv(work_csv), pd.read_csv(detail_csv)
    judged = pd.read_csv(work_verdicts_csv)
    same_server = judged[judged["kind"] == Kind.SAME_SERVER]
    pairs_first = [server for _, row in same_server.iterrows() for server in (row["a"], row["b"])]
    lead = lead_clauses(judged, work, titles)
    written = f"{margin:.2%}".replace(".50%", ".5%")
    bars = {
        "rows": work_rows(work, detail, pairs_first),
        "classes": [{"name": name, "colour": colour} for name, colour in CLASS_COLOURS.items()],
    }
    return Section(
        TITLE,
        (
            Paragraph(
                f"work per request ({len(judged)} comparisons, {work_verdicts_csv}; work is not speed: docs/work.md):",
                Medium.CONSOLE,
            ),
            *console_groups(judged),
            Paragraph(
                (
                    f"{WHY_NOT_SPEED} Within ±{written} two servers do equivalent work; every figure is in ",
                    Link("work.csv"),
                    " and ",
                    Link("work_detail.csv"),
                    ", every comparison in ",
                    Link("work_verdicts.csv"),
                    ".",
                ),
                Medium.PAGE,
            ),
            Paragraph(WHY_NOT_SPEED, Medium.MARKDOWN),
            Sentences(work_sentences(judged), WRITTEN),
            # Its bars, a server's instructions stacked by where they ran: the lens's own markup.
            Template(Path(__file__).with_name("bars.html.j2"), bars),
            Paragraph(_tools_sentence(work)),
        ),
        lead=Lead(tuple(lead["decided"]), tuple(lead["undecided"])),
    )


# How a same-server pair's outcome reads with the languages named: "{first} ... {second}".
IN_WORDS = {
    Outcome.LESS_WORK: "{first} costs less work per request than {second}",
    Outcome.MORE_WORK: "{first} costs more work per request than {second}",
    Outcome.EQUIVALENT: "{first} and {second} cost the same work per request (within ±{margin:.2%})",
    Outcome.UNDETERMINED: "this run cannot tell {first}'s work per request from {second}'s",
}


def cheapest_sentence(judged: pd.DataFrame, work: pd.DataFrame, titles: dict | None = None) -> str:
    """Which servers do the least work per request here, per language, and how much more each
    other does: the Answers' first sentence (a server measured again under another name or made
    costlier on purpose, the controls, left out; so are the baselines that host no app)."""
    controls = set(judged.loc[judged["kind"].isin([Kind.AA, Kind.VARIANT]), "a"])
    controls |= set(judged.loc[judged["kind"] == Kind.CEILING, "b"])  # the ceiling serves no app
    counted = work[(work["status"] == Status.OK) & work["instructions_per_request"].gt(0)]
    counted = counted[~counted["server"].isin(controls)]
    several = counted[list(CONDITION)].drop_duplicates().shape[0] > 1
    parts = []
    for scope, rows in counted.groupby([*CONDITION, "language"], sort=True):
        ranked = rows.sort_values("instructions_per_request")
        least = ranked.iloc[0]
        others = ", ".join(
            f"{row.server} {row.instructions_per_request / least['instructions_per_request']:.2f}×"
            for row in ranked.iloc[1:].itertuples()
        )
        where = f" ({' · '.join(map(str, scope[:-1]))})" if several else ""
        then = f", then {others} its instructions" if others else ""
        parts.append(
            f"{_title(titles, scope[-1])}{where}: {least['server']} "
            f"({least['instructions_per_request']:,.0f} instructions a request){then}"
        )
    if not parts:
        return ""
    return (
        "The least work per request here, counted (the host's speed does not move a count): " + "; ".join(parts) + "."
    )


def lead_clauses(judged: pd.DataFrame, work: pd.DataFrame, titles: dict | None = None) -> dict[str, list[str]]:
    """What the work lens says first: which servers do the least work per request, then the
    same-server pairs (one program, two languages); the Answers' first paragraph, split into
    the sentences it decided and those it did not."""
    same = judged[(judged["kind"] == Kind.SAME_SERVER) & judged["ratio"].notna()]
    languages = dict(zip(work["server"], work["language"], strict=False)) if "language" in work else {}
    several = judged[list(CONDITION)].drop_duplicates().shape[0] > 1
    cheapest = cheapest_sentence(judged, work, titles)
    found: dict[str, list[str]] = {"decided": [cheapest] if cheapest else [], "undecided": []}
    for scope, rows in same.groupby(list(CONDITION), sort=True):
        where = f" ({' · '.join(map(str, scope))})" if several else ""
        first, second = (_title(titles, languages.get(rows[side].iloc[0])) for side in ("a", "b"))
        for outcome, pairs in rows.groupby("outcome", sort=False):
            words = IN_WORDS.get(outcome, "{first} against {second}: " + str(outcome))
            figures = ", ".join(
                f"{row.a}/{row.b} {row.ratio:.3f}× (±{math.log(row.ci_high / row.ratio):.2%})"
                for row in pairs.itertuples()
            )
            text = words.format(first=first, second=second, margin=pairs["margin"].iloc[0])
            decided = outcome in DECIDED or outcome == Outcome.EQUIVALENT
            found["decided" if decided else "undecided"].append(
                f"By work per request{where} (counted, not timed), on the same server {text}: {figures}."
            )
    return found


def _title(titles: dict | None, language) -> str:
    return (titles or {}).get(language) or str(language).capitalize()


def _tools_sentence(work: pd.DataFrame) -> str:
    """What counted, once: comparisons across runs need the same versions."""
    first = work.dropna(subset=["valgrind"]).head(1)
    if first.empty:
        return ""
    row = first.iloc[0]
    return f"Counted with {row['valgrind']} and {row['perf']} on {row['cpu_model']}."


def console_line(row: pd.Series) -> str:
    """One work comparison on one line, hyperfine's way: the figure, its interval, the word."""
    if pd.isna(row["ratio"]):
        return f"{row['a']} against {row['b']}: not compared on work ({row['why']})"
    timed = f" (timed at {row['timed_at']}: {row['timed_outcome']})" if isinstance(row.get("timed_at"), str) else ""
    return (
        f"{row['a']}: {row['ratio']:.3f}× [{row['ci_low']:.3f}–{row['ci_high']:.3f}] the instructions per request "
        f"of {row['b']} — {row['outcome']}{timed}"
    )


def comparison_lines(judged: pd.DataFrame) -> list[str]:
    """The work comparisons, a heading per profile and workload and a line each."""
    lines = []
    for (profile, workload), rows in judged.groupby(["profile", "workload"], sort=False):
        lines.append(f"  {profile}, {workload}:")
        lines.extend(f"    {console_line(row)}" for _, row in _in_kind_order(rows).iterrows())
    return lines


def _in_kind_order(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(_order=rows["kind"].map(KIND_ORDER).fillna(9)).sort_values("_order", kind="stable")


def console_groups(judged: pd.DataFrame) -> list[Group]:
    """The console's work comparisons: a group per profile and workload, a line each."""
    groups = []
    for (profile, workload), rows in judged.groupby(["profile", "workload"], sort=False):
        lines = Sentences([console_line(row) for _, row in _in_kind_order(rows).iterrows()], Medium.CONSOLE, "")
        groups.append(Group(f"{profile}, {workload}:", (lines,), Medium.CONSOLE))
    return groups


def counted_text(judged: pd.DataFrame) -> str:
    """The work lens's first answer, from the counts alone, as soon as its jobs are done: the
    rounds that time the same servers are still to come, so no timed comparison is beside it."""
    heading = (
        f"\nwork per request ({len(judged)} comparisons, counted before the timed rounds; "
        "answers/work.txt repeats them with the timed comparison beside each when the run ends):"
    )
    return "\n".join([heading, *comparison_lines(judged)]) + "\n"
