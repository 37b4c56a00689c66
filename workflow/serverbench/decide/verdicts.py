"""Verdicts: for each declared comparison at each condition (profile,
workload, tool, concurrency), which server is faster, whether they are
equivalent, or that the run could not tell — and how small a difference it
could have told.

Each comparison is estimated from the two servers' full-speed figures where
their cells have windows (``decide.fullspeed``: an upper quantile of the
windows pooled over the rounds, rounds resampled), else from a model of the
run's delivered req/s (``decide.inference``: server and round effects, or
Hodges–Lehmann without rounds); the delivered ratio is kept beside it. The Holm family
is what config declares (same server, family, ceiling, named pairs) and only
the tests that can reach significance at their repeat counts; each interval is
drawn at the level Holm used for it, and read against ``comparisons.margin``.
The best of each language is chosen after seeing the data, so it is described
(its ratio and 95% interval), not tested. Only comparable cells decide
(``decide.comparability``); one that is not makes its comparisons ``not
comparable``, with the reason, and is never the best of its language.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

import pandas as pd

from serverbench.decide import fairness, fullspeed, inference
from serverbench.decide import seeds as seed_studies
from serverbench.decide.comparability import reasons_not_comparable
from serverbench.decide.judgement import NOT_COMPARABLE, PENDING, SPEED, Reason, TimedComparison
from serverbench.decide.latency import latency_verdict, latency_verdicts
from serverbench.decide.margins import margin_for
from serverbench.decide.pairs import LATENCY_KINDS, best_of_languages, declared_pairs
from serverbench.decide.pending import Pending
from serverbench.decide.stats import smallest_p
from serverbench.plan import seeds as seed_data
from serverbench.plan.languages import compared, title
from serverbench.record.vocabulary import Kind, Outcome, Status
from serverbench.tables.columns import CONDITION

VERDICT_COLUMNS = [
    "kind",
    "metric",
    *CONDITION,
    "fraction",
    "offered_rps",
    "a",
    "b",
    "language_a",
    "language_b",
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "full_a",
    "full_b",
    "method",
    "ratio",
    "ci_low",
    "ci_high",
    "delivered_ratio",
    "delivered_ci_low",
    "delivered_ci_high",
    "level",
    "p_value",
    "p_holm",
    "margin",
    "detectable_ratio",
    "rounds_needed",
    "outcome",
    "why",
    "reason_codes",
    "sentence",
    "not_measured",
    "only_not_measured",
    "left_out",
    "reasons",
]
OLD_OUTCOME = "verdict"  # the outcome's column in verdicts.csv until it was called outcome like every CSV's
# The columns decided here: all of verdicts.csv but its sentence, which the report stage writes.
DECIDED_COLUMNS = [column for column in VERDICT_COLUMNS if column != "sentence"]
# The last three are facts the Answers read, so that no reader parses ``why``: the pair's servers
# not measured at all ([server, reason] pairs, JSON), whether that is the comparison's only reason
# not to be made, and the servers a best-of-language row left out ([server, reason code] pairs, JSON).
NOT_TESTED = Outcome.NOT_TESTED
BEST_OF_LANGUAGE = Kind.BEST_OF_LANGUAGE
# The fastest server of a language against its slowest at one condition (a profile's
# `server_spread`): how much the choice of server matters for that app and workload.
SERVER_SPREAD = Kind.SERVER_SPREAD
BEST_DEPLOYMENT = Kind.BEST_DEPLOYMENT  # across the apps of one `apps` profile: a language's fastest app and server
# Why a comparison came out as it did, or could not be made (a Reason's code; cells' own
# codes are decide.comparability's).
TOO_FEW = Reason("too few repeats", "fewer than 2 repeats on a side")
SPLIT_OVER_HOSTS = "split over hosts"
PHASED = "slow in phases"  # decided on delivered req/s, not full speed
LEFT_OUT = "left out"  # servers a best of language could not choose
NO_CANDIDATE = "no comparable server"
CANNOT_REACH = "cannot reach significance"
DESCRIBED = Reason(
    "chosen after the data", "described, not tested: the best of each language is chosen after seeing the data"
)


@dataclass
class CellRounds:
    """One cell's good repeats (req/s by round) and whether they may decide anything."""

    server: str
    language: str
    concurrency: int
    rps: pd.Series
    why_not: list[Reason] = field(default_factory=list)
    not_measured: str | None = None  # why the cell was skipped, where it was (its summary row's reason)
    windows: fullspeed.CellWindows | None = None
    phased: str | None = None
    jain: pd.Series | None = None  # Jain's fairness index by round (runs.csv fairness_jain)
    users: dict = field(default_factory=dict)  # median answered share and connection wait p90 (runs.csv)
    hosts: pd.Series | None = None  # the machine of each round (runs.csv host_name and host_boot_id)

    @property
    def comparable(self) -> bool:
        return not self.why_not


def measured_cells(
    runs: pd.DataFrame, summary: pd.DataFrame, excluded: set[str], windows: pd.DataFrame | None = None, spec=None
) -> dict[tuple, dict[str, CellRounds]]:
    """Per condition, every server's cell, with its windows where ``windows`` (windows.csv) has them."""
    keys = CONDITION + ["server"]
    repeats_of = {key: group for key, group in runs.groupby(keys, sort=False)}
    by_condition: dict[tuple, dict[str, CellRounds]] = {}
    for _, row in summary.iterrows():
        repeats = repeats_of.get(tuple(row[keys]), runs.iloc[:0])
        ok = repeats[(repeats["status"] == Status.OK) & repeats["rps"].notna()]
        # Repeat r of every cell is measured in round r (plan.matrix.in_rounds).
        good = ok.set_index("repeat")["rps"].astype(float)
        starved = repeats["starved_connections"].max() if repeats["starved_connections"].notna().any() else None
        why = reasons_not_comparable(row, excluded, None if starved is None else int(starved))
        cell = CellRounds(row["server"], row["language"], int(row["concurrency"]), good, why)
        if row["status"] == Status.SKIPPED:
            cell.not_measured = str(row["reason"])
        if "fairness_jain" in ok:
            cell.jain = ok.set_index("repeat")["fairness_jain"].dropna().astype(float)
            cell.users = {key: ok[key].median() for key in ("answered_share", "connection_wait_p90_ms") if key in ok}
        if "host_name" in ok and ok["host_name"].notna().any():
            named = ok[ok["host_name"].notna()]
            cell.hosts = (
                named["host_name"].astype(str) + " (boot " + named["host_boot_id"].astype(str).str[:8] + ")"
            ).set_axis(named["repeat"])
        by_condition.setdefault(tuple(row[CONDITION]), {})[row["server"]] = cell
    if spec is not None and spec["decides"]:
        _attach_windows(by_condition, windows, spec)
    return by_condition


def _attach_windows(by_condition: dict, windows: pd.DataFrame | None, spec: dict) -> None:
    """Each comparable cell's pooled windows, and whether it is slow in phases of its own
    (judged among the comparable cells of its condition)."""
    pooled = fullspeed.windows_by_cell(windows, spec)
    for condition, cells in by_condition.items():
        found = pooled.get(tuple(condition), {})
        usable = {name: found[name] for name, cell in cells.items() if cell.comparable and name in found}
        for name, reason in fullspeed.phased(usable, spec).items():
            cells[name].phased = reason
        for name, cell_windows in usable.items():
            cells[name].windows = cell_windows


def estimate_pair(
    kind: str,
    condition: tuple,
    a: CellRounds,
    b: CellRounds,
    given: tuple[Reason, ...] = (),
    quantile: float | None = None,
) -> Pending:
    """One comparison's estimate, before Holm's procedure sets the level of its interval: on the
    full-speed figures (their ``quantile`` of the windows) where both cells have them, else on
    delivered req/s. ``given``: reasons the caller already has (who a best of language left out)."""
    base = TimedComparison.of_pair(kind, SPEED, condition, a, b)
    cells = tuple(Reason(reason.code, f"{cell.server}: {reason.text}") for cell in (a, b) for reason in cell.why_not)
    split = _rounds_split_over_hosts(a, b)
    if cells or split:
        skipped = tuple((cell.server, cell.not_measured) for cell in (a, b) if cell.not_measured is not None)
        only = bool(skipped) and not split and not given and all(c.comparable or c.not_measured for c in (a, b))
        reasons = (*cells, *split, *given)
        return Pending(
            replace(base, outcome=NOT_COMPARABLE, reasons=reasons, not_measured=skipped, only_not_measured=only)
        )
    delivered = inference.estimate(a.rps, b.rps)
    counted = replace(
        base, n_a=len(a.rps), n_b=len(b.rps), a_value=float(a.rps.median()), b_value=float(b.rps.median())
    )
    if delivered is None:
        return Pending(replace(counted, outcome=NOT_COMPARABLE, reasons=(TOO_FEW,)))
    estimate, reasons, full = _full_speed(a, b, quantile), given, {}
    if estimate is None:
        estimate, reasons = delivered, (*given, *_why_delivered(a, b))
    else:
        full = {"full_a": a.windows.full_speed, "full_b": b.windows.full_speed}
    judged = replace(
        counted,
        **full,
        method=estimate.method,
        estimate=estimate.ratio,
        p_value=estimate.p_value,
        delivered_ratio=delivered.ratio,
        reasons=reasons,
    )
    return Pending(judged, estimate, delivered)


def _rounds_split_over_hosts(a: CellRounds, b: CellRounds) -> tuple[Reason, ...]:
    """A comparison pairs its cells round by round, so that the machine's level cancels; two
    cells of one round on different machines would measure the machines instead."""
    if a.hosts is None or b.hosts is None:
        return ()
    split = [r for r in a.hosts.index.intersection(b.hosts.index) if a.hosts[r] != b.hosts[r]]
    words = [
        f"round {r}: {a.server} ran on {a.hosts[r]}, {b.server} on {b.hosts[r]} (a round's cells must share a host)"
        for r in split[:1]
    ] + ([f"and {len(split) - 1} more rounds split so"] if len(split) > 1 else [])
    return tuple(Reason(SPLIT_OVER_HOSTS, text) for text in words)


def _full_speed(a: CellRounds, b: CellRounds, quantile: float | None) -> inference.Estimate | None:
    if quantile is None or a.windows is None or b.windows is None or a.phased or b.phased:
        return None
    return fullspeed.estimate(a.windows, b.windows, quantile)


def _why_delivered(a: CellRounds, b: CellRounds) -> tuple[Reason, ...]:
    """Why a comparison is on delivered req/s: a side slow in phases of its own (none: a side had no windows)."""
    return tuple(Reason(PHASED, f"{cell.server}: {cell.phased}") for cell in (a, b) if cell.phased)


def best_of_each_language(
    config: dict, condition: tuple, cells: dict[str, CellRounds], quantile: float | None = None
) -> list[Pending]:
    """The best comparable server of one language against the best of another, for each two
    compared languages present at the condition (highest median req/s)."""
    catalogue = config["catalogue"]
    usable = {
        name: statistics.median(c.rps)
        for name, c in cells.items()
        if c.comparable and len(c.rps) and not catalogue.get(name, {}).get("alias_of")
    }
    found = []
    for (first, second), best in best_of_languages(config, usable, list(cells)).items():
        members = [c for language in (first, second) for c in cells.values() if c.language == language]
        left_out = [c for c in members if not c.comparable]
        named = [f"{c.server} ({'; '.join(reason.text for reason in c.why_not)})" for c in left_out]
        given = (Reason(LEFT_OUT, f"left out: {', '.join(named)}"),) if named else ()
        codes = tuple((c.server, c.why_not[0].code) for c in left_out)
        if None in best:
            missing = [title(config, lang) for lang, server in zip((first, second), best, strict=True) if not server]
            none = Reason(NO_CANDIDATE, f"no comparable {' or '.join(missing)} server")
            empty = TimedComparison(
                kind=BEST_OF_LANGUAGE,
                a=None,
                b=None,
                metric=SPEED,
                condition=tuple(zip(CONDITION, condition, strict=True)),
                outcome=NOT_COMPARABLE,
                reasons=(none, *given),
                left_out=codes,
            )
            found.append(Pending(empty))
            continue
        judged = estimate_pair(BEST_OF_LANGUAGE, condition, cells[best[0]], cells[best[1]], given, quantile)
        judged.update(left_out=codes)
        found.append(judged)
    return found


def server_spread(
    config: dict, condition: tuple, cells: dict[str, CellRounds], quantile: float | None = None
) -> list[Pending]:
    """For each language with two or more comparable servers at the condition (copies of a
    server left out), its fastest against its slowest by median req/s. Chosen by their own
    figures, so the estimate leans high (the winner's curse); the interval is the pair's."""
    catalogue = config["catalogue"]
    by_language: dict[str, list[CellRounds]] = {}
    for name, cell in cells.items():
        copy = {"alias_of", "variant_of"} & set(catalogue.get(name, {}))
        if cell.comparable and len(cell.rps) and not copy and cell.language in compared(config):
            by_language.setdefault(cell.language, []).append(cell)
    ranked = [sorted(members, key=lambda c: statistics.median(c.rps)) for _, members in sorted(by_language.items())]
    return [estimate_pair(SERVER_SPREAD, condition, r[-1], r[0], quantile=quantile) for r in ranked if len(r) >= 2]


def best_deployments(
    config: dict, cells_by_condition: dict[tuple, dict[str, CellRounds]], quantile: float | None = None
) -> list[Pending]:
    """Across the profiles one profile of several ``apps`` with ``server_spread`` became
    (apps-flask, apps-dancer2, ...), per workload and load condition: each language's fastest
    deployment (an app on a server) by median req/s against the other language's. Their
    rounds are shared, so the pair is compared round by round as any pair; chosen by their
    own figures, the estimate leans high. A deployment is named "APP on SERVER"; the row's
    profile is the one the apps came from."""
    catalogue = config["catalogue"]
    groups: dict[tuple, dict[str, list[CellRounds]]] = {}
    for condition, cells in cells_by_condition.items():
        profile = config["profiles"].get(condition[0], {})
        parent = profile.get("expanded_from")
        if not parent or not profile.get("server_spread"):
            continue
        for name, cell in cells.items():
            copy = {"alias_of", "variant_of"} & set(catalogue.get(name, {}))
            if cell.comparable and len(cell.rps) and not copy and cell.language in compared(config):
                named = replace(cell, server=f"{profile['app']} on {name}")
                groups.setdefault((parent, *condition[1:]), {}).setdefault(cell.language, []).append(named)
    found = []
    for condition, by_language in sorted(groups.items()):
        best = [max(members, key=lambda c: statistics.median(c.rps)) for _, members in sorted(by_language.items())]
        if len(best) == 2:
            faster, slower = sorted(best, key=lambda c: statistics.median(c.rps), reverse=True)
            found.append(estimate_pair(BEST_DEPLOYMENT, condition, faster, slower, quantile=quantile))
    return found


def read_verdicts(path) -> pd.DataFrame:
    """A verdicts.csv as this version writes it: one written before the field had one name in
    every CSV calls its outcome ``verdict``, read as ``outcome``."""
    table = pd.read_csv(path)
    if OLD_OUTCOME in table.columns and "outcome" not in table.columns:
        return table.rename(columns={OLD_OUTCOME: "outcome"})
    return table


def comparison_table(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    config: dict,
    latency: pd.DataFrame | None = None,
    windows: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every comparison of ``comparisons`` as a row of verdicts.csv, without its sentence (the
    report stage's ``report.verdicts.verdict_table`` adds it)."""
    found = comparisons(runs, summary, config, latency, windows)
    return pd.DataFrame([comparison.as_row() for comparison in found], columns=DECIDED_COLUMNS)


def comparisons(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    config: dict,
    latency: pd.DataFrame | None = None,
    windows: pd.DataFrame | None = None,
) -> list[TimedComparison]:
    """Every declared comparison of a run, decided after Holm's procedure; where rate
    cells ran (``latency``, latency.csv), each server's knee and the pairs' latencies too.
    ``windows`` (windows.csv): the full-speed figures decide where both cells have them."""
    spec = config["comparisons"]
    pending = _estimated(runs, summary, config, windows)
    if latency is not None and not latency.empty:
        pending += [Pending(found) for found in latency_verdicts(latency, config)]
    alpha = 1 - spec["confidence"]
    family = []
    for judged in filter(_tested, pending):
        left_out = _cannot_reach(judged, alpha)
        if left_out:
            judged.update(reasons=(*judged.comparison.reasons, left_out))
        else:
            family.append(judged)
    adjusted, levels = inference.holm_levels([judged.comparison.p_value for judged in family], alpha)
    for judged, p_holm, level in zip(family, adjusted, levels, strict=True):
        judged.update(p_holm=p_holm, level=level)
    for judged in pending:
        kind, profile = judged.comparison.kind, dict(judged.comparison.condition)["profile"]
        if kind in LATENCY_KINDS:
            _decide_latency(judged, spec["confidence"])
        elif kind == fairness.KIND:
            _decide(judged, alpha, spec.get("fairness_margin", fairness.DEFAULT_MARGIN))
            judged.update(outcome=fairness.WORDS.get(judged.comparison.outcome, judged.comparison.outcome))
        else:
            _decide(judged, alpha, margin_for(config, profile, kind))
    return [judged.comparison for judged in pending]


def _estimated(runs: pd.DataFrame, summary: pd.DataFrame, config: dict, windows: pd.DataFrame | None) -> list[Pending]:
    """Every throughput (and fairness) comparison of the run, estimated, before Holm's procedure."""
    spec, full = config["comparisons"], config.get("full_speed") or {"decides": False}
    quantile = full["quantile"] if full["decides"] else None
    pending: list[Pending] = []
    cells_by_condition = measured_cells(runs, summary, set(spec["not_comparable_flags"]), windows, full)
    studies = _studies_of(summary)
    for condition, cells in sorted(cells_by_condition.items()):
        pairs = declared_pairs(config, sorted(cells))
        pairs += _seed_pairs(studies, condition[0], sorted(cells), pairs)
        for kind, a, b in pairs:
            pending.append(estimate_pair(kind, condition, cells[a], cells[b], quantile=quantile))
            # Where waiting connections are what keeps two servers apart, compare what a user gets.
            if pending[-1].comparison.outcome == NOT_COMPARABLE:
                pending += fairness.fairness_pair(kind, condition, cells[a], cells[b])
        if spec["best_of_language"]:
            pending += best_of_each_language(config, condition, cells, quantile)
        if config["profiles"].get(condition[0], {}).get("server_spread"):
            pending += server_spread(config, condition, cells, quantile)
    return pending + best_deployments(config, cells_by_condition, quantile)


def _studies_of(summary: pd.DataFrame):
    """The seed studies, where a profile of the run re-runs one (``seeds/studies.yaml``)."""
    studies = seed_data.load(locate_quotes=False)
    return studies if any(studies.for_profile(p) for p in summary["profile"].unique()) else None


def _seed_pairs(studies, profile: str, servers: list[str], declared: list[tuple]) -> list[tuple[str, str, str]]:
    """The seed's servers compared pairwise (kind ``seed``) where no other kind already compares them."""
    if studies is None:
        return []
    taken = {frozenset((a, b)) for _, a, b in declared}
    found = seed_studies.declared_pairs(studies, profile, servers)
    return [(seed_studies.SEED_KIND, a, b) for a, b in found if frozenset((a, b)) not in taken]


def _tested(judged: Pending) -> bool:
    """A candidate for Holm's family: a declared comparison (or p99 test) with a p-value and no
    outcome yet (the best of each language is chosen after seeing the data: described only)."""
    found = judged.comparison
    return found.p_value is not None and found.outcome == PENDING and found.kind != BEST_OF_LANGUAGE


def _cannot_reach(judged: Pending, alpha: float) -> Reason | None:
    """Why a candidate stays out of Holm's family (its repeats cannot reach significance), else None."""
    found, estimate = judged.comparison, judged.estimate
    reachable = estimate.can_reach(alpha) if estimate else smallest_p(found.n_a, found.n_b) < alpha
    if reachable:
        return None
    words = f"{found.n_a} against {found.n_b} repeats cannot reach p < {alpha:g}: left out of the Holm family"
    return Reason(CANNOT_REACH, words)


def _decide(judged: Pending, alpha: float, margin: float) -> None:
    """The outcome of one throughput comparison, from its interval at its Holm level."""
    found, estimate, delivered = judged.comparison, judged.estimate, judged.delivered
    if found.outcome == NOT_COMPARABLE or estimate is None:
        return
    fields: dict = {"margin": margin}
    if delivered is not None:  # what this machine delivered, at the same level: beside the figure that decides
        fields["delivered_low"], fields["delivered_high"] = delivered.interval(found.level or alpha)
    if found.level is None:  # described or left out: the unadjusted interval, no outcome
        low, high = estimate.interval(alpha)
        reasons = (DESCRIBED, *found.reasons) if found.kind == BEST_OF_LANGUAGE else found.reasons
        judged.update(**fields, low=low, high=high, level=alpha, outcome=NOT_TESTED, reasons=reasons)
        return
    low, high = estimate.interval(found.level)
    fields.update(low=low, high=high, outcome=inference.outcome(low, high, margin))
    fields["detectable_ratio"] = estimate.detectable_ratio(found.level, margin)
    if fields["outcome"] == inference.UNDETERMINED:  # what this host's noise would need to decide it
        rounds = min(found.n_a, found.n_b)
        fields["rounds_needed"] = inference.rounds_to_decide(found.estimate, low, high, rounds, margin)
    judged.update(**fields)


def _decide_latency(judged: Pending, confidence: float) -> None:
    found = judged.comparison
    if found.outcome == PENDING:
        tested = found.p_holm is not None
        judged.update(outcome=latency_verdict(found, 1 - confidence) if tested else NOT_TESTED)
