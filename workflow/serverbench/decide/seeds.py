"""The seed studies beside a run (``serverbench seeds RESULTS``, seeds.csv, seed_claims.csv).

For each seed table a profile re-runs (``seeds/studies.yaml``: its
``profile``), at each condition of the run: the seed's servers with the
seed's req/s and this run's, each as a ratio to a reference server present in
both (absolute req/s differ by hardware; our ratio's 95% interval resamples
each server's repeats), the rank order in both, and Kendall's tau between the
two orders with a 95% interval from the same resampling.

Each seed claim is judged twice: against the seed's own figures (*holds*,
*contradicted*, or *not stated* where the seed gives no numbers: its
internal contradictions show here), and against the run, from its verdicts
(*holds*, *contradicted*, *undetermined*, *not measured*). The seed's servers
are declared comparisons of their profile (:func:`declared_pairs`, kind
``seed``), so every claim about req/s has a verdict to read.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats

from serverbench.decide import margins
from serverbench.decide.margins import Question, Side
from serverbench.decide.pairs import FAIRNESS
from serverbench.plan.seeds import Seeds
from serverbench.record.vocabulary import Kind, Outcome, Status

# A claim's outcomes, in the seed and in the run.
HOLDS, CONTRADICTED, UNDETERMINED, NOT_MEASURED, NOT_STATED = (
    Outcome.HOLDS,
    Outcome.CONTRADICTED,
    Outcome.UNDETERMINED,
    Outcome.NOT_MEASURED,
    Outcome.NOT_STATED,
)
SEED_KIND = Kind.SEED
# Verdict kinds that rank two servers on req/s (any of them can carry a seed pair).
THROUGHPUT_KINDS = (Kind.SAME_SERVER, Kind.FAMILY, Kind.NAMED, Kind.CEILING, SEED_KIND, Kind.AA, Kind.VARIANT)
SIDE_COLUMNS = [
    "seed",
    "table",
    "profile",
    "tool",
    "concurrency",
    "seed_server",
    "server",
    "seed_rps",
    "seed_ratio",
    "seed_rank",
    "rps",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "rank",
    "status",
    "flags",
    "kendall_tau",
    "tau_ci_low",
    "tau_ci_high",
    "reference",
]
CLAIM_COLUMNS = [
    "claim",
    "seed",
    "quote",
    "table",
    "says",
    "seed_ratio",
    "in_seed",
    "seed_why",
    "profile",
    "in_run",
    "run_why",
]
LOWER_IS_BETTER = {"latency": ("latency_mean", "latency"), "memory": ("memory",), "errors": ("error_rate", "errors")}
RESAMPLES = 2000
EVENLY = {
    Outcome.FAIRER: "more evenly than",
    Outcome.LESS_FAIR: "less evenly than",
    Outcome.EQUIVALENT: "as evenly as",
    Outcome.UNDETERMINED: "(undetermined) against",
}


def declared_pairs(seeds: Seeds, profile: str, servers: list[str]) -> list[tuple[str, str]]:
    """Every two of the profile's seed servers present (the seed's order kept: its ranking, else its figures)."""
    pairs = []
    for table in seeds.for_profile(profile):
        present = [s for s in _seed_order(seeds, table).values() if s in servers]
        pairs += [(a, b) for a, b in itertools.combinations(dict.fromkeys(present), 2) if (a, b) not in pairs]
    return pairs


def _seed_order(seeds: Seeds, table: dict) -> dict[str, str]:
    """The table's servers (label → catalogue) best first: by the seed's req/s, else its ranking claim."""
    mapping = seeds.catalogue_of(table["seed"], table["table"])
    ranking = next(
        (
            c["ranking"]
            for c in seeds.claims
            if table["table"] in c["tables"] and c.get("ranking") and c["seed"] == table["seed"]
        ),
        None,
    )
    rps = _figure(seeds, table["seed"], table["table"], "rps")
    if rps:
        order = sorted(mapping, key=lambda label: -(rps.get(label) or -math.inf))
    else:
        order = [label for label in ranking or [] if label in mapping] + [
            m for m in mapping if m not in (ranking or [])
        ]
    return {label: mapping[label] for label in order}


def _figure(seeds: Seeds, seed: str, table: str, *metrics: str, end: str = "number") -> dict[str, float]:
    """Server label → its stated figure (``end``: "number", or a range's "low" or "high" end)."""
    rows = seeds.figures[(seeds.figures["seed"] == seed) & (seeds.figures["table"] == table)]
    rows = rows[rows["metric"].isin(metrics) & rows[end].notna()]
    return dict(zip(rows["server"], rows[end].astype(float), strict=True))


# --- claims against the seed's own figures ---------------------------------------------------


def judge_in_seed(seeds: Seeds, claim: dict, table: str, item: dict) -> tuple[float | None, str, str]:
    """(ratio better/than in the seed's figures, outcome, why) of one comparison a claim makes."""
    metric = item["metric"]
    names = (metric,) if metric == "rps" else LOWER_IS_BETTER[metric]
    # A range ("7500...5000") counts at the end least favourable to the claim.
    low = _figure(seeds, claim["seed"], table, *names, end="low")
    high = _figure(seeds, claim["seed"], table, *names, end="high")
    if metric == "rps":
        better, than = low.get(item["better"]), high.get(item["than"])
    else:
        better, than = high.get(item["better"]), low.get(item["than"])
    if better is None or than is None:
        missing = [s for s, v in ((item["better"], better), (item["than"], than)) if v is None]
        return None, NOT_STATED, f"the seed states no {metric} for {' or '.join(missing)} in {table}"
    ratio = better / than if metric == "rps" else than / better
    needed = item.get("by_at_least", 1.0)
    caveat = _different_command(seeds, claim["seed"], table, (item["better"], item["than"]))
    outcome = HOLDS if ratio > needed else CONTRADICTED
    why = f"{table}: {item['better']} {ratio:.2f}× {item['than']} by the seed's own {metric}"
    if needed > 1:
        why += f" (the claim needs {needed:.2f}×)"
    return ratio, outcome, "; ".join(filter(None, [why, caveat]))


def _different_command(seeds: Seeds, seed: str, table: str, servers) -> str:
    rows = seeds.figures[(seeds.figures["seed"] == seed) & (seeds.figures["table"] == table)]
    command = seeds.table(seed, table)["command"]
    odd = sorted({r.server for r in rows.itertuples() if r.server in servers and r.command != command})
    return "; ".join(f"{s}'s figure is from another command than the table's" for s in odd)


# --- claims against a run ---------------------------------------------------------------------


def judge_in_run(seeds: Seeds, claim: dict, table: str, item: dict, verdicts: pd.DataFrame) -> tuple[str, str]:
    """One comparison a claim makes, read from the run's verdicts at every condition of the table's profile."""
    profile = seeds.table(claim["seed"], table)["profile"]
    mapping = seeds.catalogue_of(claim["seed"], table)
    a, b = mapping[item["better"]], mapping[item["than"]]
    if item["metric"] != "rps":
        return NOT_MEASURED, f"the run decides req/s and fairness, not {item['metric']}"
    if profile is None or verdicts.empty:
        return NOT_MEASURED, "no profile re-runs this table" if profile is None else "no verdicts"
    rows = verdicts[(verdicts["profile"] == profile) & verdicts["kind"].isin(THROUGHPUT_KINDS)]
    rows = rows[((rows["a"] == a) & (rows["b"] == b)) | ((rows["a"] == b) & (rows["b"] == a))]
    if rows.empty:
        return NOT_MEASURED, f"{a} against {b} is not compared in this run ({profile})"
    outcomes = [
        _one_verdict(row, a, item.get("by_at_least", 1.0))
        for row in rows.drop_duplicates(["tool", "concurrency"]).itertuples()
    ]
    return _combine([o for o, _ in outcomes]), "; ".join([why for _, why in outcomes] + _waiting(verdicts, a, b))


def _waiting(verdicts: pd.DataFrame, a: str, b: str) -> list[str]:
    """Where starvation kept the two apart on req/s: how evenly each served its connections."""
    rows = verdicts[
        (verdicts["kind"] == FAIRNESS)
        & (((verdicts["a"] == a) & (verdicts["b"] == b)) | ((verdicts["a"] == b) & (verdicts["b"] == a)))
    ]
    return [
        f"{row.tool} c={row.concurrency}: {row.a} served its connections {EVENLY.get(row.outcome, row.outcome)}"
        f" {row.b} (Jain's index {row.median_a:.2f} against {row.median_b:.2f})"
        for row in rows.itertuples()
    ]


def _one_verdict(row, better: str, needed: float) -> tuple[str, str]:
    where = f"{row.tool} c={row.concurrency}"
    if row.outcome in (Outcome.NOT_COMPARABLE, Outcome.NOT_TESTED) or pd.isna(row.ci_low):
        return UNDETERMINED, f"{where}: {row.outcome} ({row.why})"
    low, high, ratio = row.ci_low, row.ci_high, row.ratio
    if row.a != better:
        low, high, ratio = 1 / high, 1 / low, 1 / ratio
    said = f"{where}: {ratio:.2f}× [{low:.2f}, {high:.2f}]"
    if needed > 1:
        # The claim is "by at least `needed`": the interval read against that ratio, no margin.
        found = margins.side(low / needed, high / needed, 0.0, Question.IN_ONE_RUN)
        outcome = {Side.ABOVE: HOLDS, Side.BELOW: CONTRADICTED}.get(found, UNDETERMINED)
        return outcome, f"{said} against the claimed {needed:.2f}×"
    if row.outcome in (Outcome.FASTER, Outcome.SLOWER):
        return (HOLDS if (row.outcome == Outcome.FASTER) == (row.a == better) else CONTRADICTED), said
    if row.outcome == Outcome.EQUIVALENT:
        return CONTRADICTED, f"{said}: equivalent, not better"
    return UNDETERMINED, f"{said}: {row.outcome}"


def _combine(outcomes: list[str]) -> str:
    if CONTRADICTED in outcomes:
        return CONTRADICTED
    measured = [o for o in outcomes if o not in (NOT_MEASURED, NOT_STATED)]
    if not measured:
        return outcomes[0] if outcomes else NOT_MEASURED
    return HOLDS if all(o == HOLDS for o in measured) else UNDETERMINED


def claim_table(seeds: Seeds, verdicts: pd.DataFrame | None = None, profiles: set[str] | None = None) -> pd.DataFrame:
    """Every claim, per table and comparison it makes, judged in the seed and (where ``profiles``
    ran) in the run."""
    verdicts = pd.DataFrame() if verdicts is None else verdicts
    rows = []
    for claim in seeds.claims:
        for table in claim["tables"]:
            profile = seeds.table(claim["seed"], table)["profile"]
            for item in claim["says"]:
                ratio, in_seed, seed_why = judge_in_seed(seeds, claim, table, item)
                if profiles is not None and profile not in profiles:
                    in_run, run_why = NOT_MEASURED, f"profile {profile} is not in this run" if profile else "no profile"
                else:
                    in_run, run_why = judge_in_run(seeds, claim, table, item, verdicts)
                says = f"{item['better']} better than {item['than']} on {item['metric']}"
                if item.get("by_at_least"):
                    says += f" by ≥{item['by_at_least']:g}×"
                rows.append(
                    dict(
                        claim=claim["id"],
                        seed=claim["seed"],
                        quote=claim["quote"],
                        table=table,
                        says=says,
                        seed_ratio=ratio,
                        in_seed=in_seed,
                        seed_why=seed_why,
                        profile=profile,
                        in_run=in_run,
                        run_why=run_why,
                    )
                )
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def claims_in_brief(table: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: its outcome in the seed and in the run, over every comparison it makes."""
    rows = []
    for claim, group in table.groupby("claim", sort=False):
        reasons = dict.fromkeys(group["seed_why"].tolist() + group["run_why"].tolist())
        rows.append(
            dict(
                claim=claim,
                seed=group["seed"].iloc[0],
                quote=group["quote"].iloc[0],
                in_seed=_combine(list(group["in_seed"])),
                in_run=_combine(list(group["in_run"])),
                why="; ".join(reasons),
            )
        )
    return pd.DataFrame(rows, columns=["claim", "seed", "quote", "in_seed", "in_run", "why"])


# --- side by side ------------------------------------------------------------------------------


def side_by_side(seeds: Seeds, runs: pd.DataFrame, summary: pd.DataFrame, seed_rng: int = 0) -> pd.DataFrame:
    """For each seed table a profile of the run re-runs, at each of its conditions: the seed's servers
    and ours, as ratios to the reference, ranked, with Kendall's tau (``SIDE_COLUMNS``)."""
    rows = []
    for profile in sorted(summary["profile"].unique()):
        for table in seeds.for_profile(profile):
            cells = summary[summary["profile"] == profile]
            for (tool, concurrency), group in cells.groupby(["tool", "concurrency"], sort=True):
                rows += _one_condition(seeds, table, runs, group, tool, concurrency, np.random.default_rng(seed_rng))
    return pd.DataFrame(rows, columns=SIDE_COLUMNS)


def _one_condition(seeds, table, runs, cells, tool, concurrency, rng) -> list[dict]:
    order = _seed_order(seeds, table)
    seed_rps = _figure(seeds, table["seed"], table["table"], "rps")
    reference = table["reference"]
    ref_server = order.get(reference)
    here = runs[
        (runs["profile"] == cells["profile"].iloc[0])
        & (runs["tool"] == tool)
        & (runs["concurrency"] == concurrency)
        & (runs["status"] == Status.OK)
    ]
    samples = {
        label: here[here["server"] == server]["rps"].dropna().astype(float).to_numpy()
        for label, server in order.items()
    }
    medians = {label: float(np.median(v)) if len(v) else None for label, v in samples.items()}
    ours = [label for label in order if medians[label]]
    our_rank = _ranks({label: medians[label] for label in ours})
    seed_rank = _ranks(seed_rps) if seed_rps else {label: i + 1 for i, label in enumerate(order)}
    tau, tau_low, tau_high = _kendall(ours, seed_rank, samples, rng)
    ref_median = medians.get(reference)
    rows = []
    for label, server in order.items():
        cell = cells[cells["server"] == server]
        ratio_low = ratio_high = ratio = None
        if ref_median and medians[label]:
            ratio = medians[label] / ref_median
            ratio_low, ratio_high = _ratio_interval(samples[label], samples[reference], rng)
        seed_ratio = seed_rps[label] / seed_rps[reference] if label in seed_rps and reference in seed_rps else None
        rows.append(
            dict(
                seed=table["seed"],
                table=table["table"],
                profile=cells["profile"].iloc[0],
                tool=tool,
                concurrency=concurrency,
                seed_server=label,
                server=server,
                seed_rps=seed_rps.get(label),
                seed_ratio=seed_ratio,
                seed_rank=seed_rank.get(label),
                rps=medians[label],
                ratio=ratio,
                ratio_ci_low=ratio_low,
                ratio_ci_high=ratio_high,
                rank=our_rank.get(label),
                status=cell["status"].iloc[0] if len(cell) else "not run",
                flags=cell["flags"].iloc[0] if len(cell) else "",
                kendall_tau=tau,
                tau_ci_low=tau_low,
                tau_ci_high=tau_high,
                reference=f"{reference} ({ref_server})" if ref_server else reference,
            )
        )
    return rows


def _ranks(values: dict[str, float]) -> dict[str, int]:
    return {label: i + 1 for i, label in enumerate(sorted(values, key=lambda k: -values[k]))}


def _kendall(ours: list[str], seed_rank: dict, samples: dict, rng) -> tuple:
    """Kendall's tau between the seed's order and ours, with a 95% interval resampling each server's repeats."""
    both = [label for label in ours if label in seed_rank]
    if len(both) < 2:
        return None, None, None
    seed = [seed_rank[label] for label in both]
    observed = stats.kendalltau(seed, [-np.median(samples[label]) for label in both]).statistic
    draws = []
    for _ in range(RESAMPLES):
        medians = [-np.median(rng.choice(samples[label], len(samples[label]))) for label in both]
        draws.append(stats.kendalltau(seed, medians).statistic)
    draws = np.array([d for d in draws if not np.isnan(d)])
    low, high = np.quantile(draws, [0.025, 0.975]) if len(draws) else (None, None)
    return float(observed), None if low is None else float(low), None if high is None else float(high)


def _ratio_interval(a: np.ndarray, b: np.ndarray, rng) -> tuple:
    if len(a) < 2 or len(b) < 2:
        return None, None
    draws = [np.median(rng.choice(a, len(a))) / np.median(rng.choice(b, len(b))) for _ in range(RESAMPLES)]
    low, high = np.quantile(draws, [0.025, 0.975])
    return float(low), float(high)
