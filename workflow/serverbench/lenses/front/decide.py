"""Does the server need a front? front.csv's runs as comparisons (``Comparison``), and an
answer per server (``FrontAnswer``).

For each deployment behind a front against the server bare, measured side by side in the
same rounds:

- **the front's cost with fast clients** (metric speed): the normal clients' rate behind the
  front over bare, round by round; a t interval of the mean log ratio, read against the
  profile's ``cost_margin`` as two things measured in one run (faster, slower, equivalent);
- **the front's work** (metric work, where the run counted work): instructions and syscalls
  per request of the deployment (the front's among them) over the bare server's, each widened
  by the servers' declared spread, read against the work lens's margin (more work, less work);
- **what it saves with slow clients** (metric ``rate kept``), one per slow condition: the
  share of their rate alone the normal clients keep beside the slow clients, each round on
  each deployment; the difference front − bare, a t interval of its mean, read against
  ``margin`` on the difference scale (higher: the front saves).

Bare, each server also gets the share it keeps against 1, per condition and pooled over
every slow sender, body and reader measured (``EVERY_SLOW_KIND``: each round of each
condition a figure, so the interval is narrow where the slow clients do not touch it). The
answer: it *needs a front* where the front's deployment kept clearly more beside some slow
clients, or where bare the slow clients starved the normal ones in some placement and behind
the front in none; it *does not need one* where, bare, the pooled share is equivalent to 1, no
slow kind took a clear share and no placement starved it (clients that connect per request are
load, not slow clients: they are reported, not counted here), or where the front kept no more
anywhere; otherwise the run could not tell.

Placements: which worker the kernel hands each slow connection decides whether a server whose
workers each accept connections (gunicorn's gthread worker) is starved, so one condition's shares
are not one figure with noise around it but a mixture (all kept, or none). Each round of each
condition is a placement (the slow clients connect afresh); one in which the normal clients kept
less than ``starved_share`` of their rate alone is *starved*, a fact counted (k of n) beside the
interval, never averaged into it: a server starved in 1 of 15 placements can be starved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from serverbench.decide import margins
from serverbench.decide.judgement import Comparison, Reason
from serverbench.lenses.front.record import ALONE, EVERY_SLOW_KIND, FrontAnswer, FrontKind, FrontMetric, SlowKind
from serverbench.lenses.front.table import Counted
from serverbench.plan.catalogue import server_entry
from serverbench.record.vocabulary import Metric, Outcome, Status

LEVEL = 0.95
# What one slow-clients run of a deployment is measured under (front.csv columns).
SLOW_CONDITION = ["kind", "relative", "slow_count"]


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """The mean and its t interval at ``LEVEL`` (a zero-width one where every value is equal)."""
    mean = float(np.mean(values))
    if len(values) < 2 or float(np.std(values)) == 0.0:
        return mean, mean, mean
    low, high = stats.t.interval(LEVEL, len(values) - 1, loc=mean, scale=stats.sem(values))
    return mean, float(low), float(high)


def _paired(runs: pd.DataFrame, a: str, b: str, kind: str) -> pd.DataFrame:
    """Each round's rate of ``a`` and ``b`` under one condition, side by side."""
    chosen = runs[runs["kind"] == kind]
    table = chosen.pivot_table(index="round", columns="deployment", values="rps", aggfunc="first")
    return table[[a, b]].dropna() if {a, b} <= set(table.columns) else pd.DataFrame(columns=[a, b])


def _made(server_row, a: str, b: str, metric: str, condition: tuple, margin: float) -> dict:
    return {
        "kind": FrontKind.FRONT,
        "a": a,
        "b": b,
        "metric": metric,
        "margin": margin,
        "level": LEVEL,
        "condition": (
            ("profile", server_row["profile"]),
            ("server", server_row["server"]),
            ("language", server_row["language"]),
            *condition,
        ),
    }


def cost(runs: pd.DataFrame, a: str, b: str, margin: float, server_row) -> Comparison:
    """The front's cost with fast clients: a's rate over b's, round by round."""
    made = _made(server_row, a, b, Metric.SPEED, (("slow", SlowKind.NONE),), margin)
    pairs = _paired(runs, a, b, SlowKind.NONE)
    if len(pairs) < 2 or (pairs <= 0).any().any():
        why = Reason("too_few", f"{len(pairs)} round(s) with both deployments answering: no interval")
        return Comparison(outcome=Outcome.UNDETERMINED, reasons=(why,), **made)
    logs = np.log(pairs[a].to_numpy(float) / pairs[b].to_numpy(float))
    mean, low, high = t_interval(logs)
    side = margins.side(math.exp(low), math.exp(high), margin, margins.Question.IN_ONE_RUN)
    return Comparison(
        outcome=margins.outcome(side, above=Outcome.FASTER, below=Outcome.SLOWER),
        estimate=math.exp(mean),
        a_value=float(pairs[a].median()),
        b_value=float(pairs[b].median()),
        low=math.exp(low),
        high=math.exp(high),
        **made,
    )


def kept(runs: pd.DataFrame, deployment: str, kind: str, relative, count: int) -> pd.Series:
    """The share of its rate alone the normal clients kept beside the slow clients, by round."""
    mine = runs[runs["deployment"] == deployment]
    alone = mine[mine["kind"] == SlowKind.NONE].set_index("round")["rps"]
    beside = mine[(mine["kind"] == kind) & (mine["slow_count"] == count)]
    if relative is not None:
        beside = beside[beside["relative"] == relative]
    beside = beside.set_index("round")["rps"]
    share = (beside / alone).dropna()
    return share[np.isfinite(share)]


SLOW_KINDS = (SlowKind.SENDERS, SlowKind.BODY, SlowKind.READERS)


def pooled(runs: pd.DataFrame, deployment: str, conditions: list[tuple]) -> pd.Series:
    """The shares kept beside every slow sender, body and reader measured, by (condition, round)."""
    parts = {condition: kept(runs, deployment, *condition) for condition in conditions if condition[0] in SLOW_KINDS}
    return pd.concat(parts) if parts else pd.Series(dtype=float)


@dataclass(frozen=True)
class KeptComparison(Comparison):
    """The share kept beside slow clients, with the placements that starved each side: of
    ``placements`` (rounds of the condition, or of every condition pooled, measured on both
    sides), those in which the normal clients kept less than the profile's ``starved_share``."""

    placements: int | None = None
    starved_a: int | None = None
    starved_b: int | None = None  # None where b is the rate alone

    def as_row(self) -> dict:
        return {
            **super().as_row(),
            "placements": self.placements,
            "starved_a": self.starved_a,
            "starved_b": self.starved_b,
        }


def saving(runs, a: str, b: str | None, condition: tuple, spec: dict, server_row, every=None) -> KeptComparison:
    """The share kept beside slow clients: a against b (front − bare), or a against 1 (bare
    only); ``every``: the conditions pooled (``EVERY_SLOW_KIND``), each round of each a pair."""
    kind, relative, count = condition
    margin, starving = float(spec["margin"]), float(spec["starved_share"])
    named = (("slow", kind), ("relative", relative), ("slow_count", int(count)))
    made = _made(server_row, a, b or ALONE, FrontMetric.KEPT, named, margin)
    share_a = pooled(runs, a, every) if every else kept(runs, a, kind, relative, count)
    share_b = pd.Series(1.0, index=share_a.index)
    if b:
        share_b = pooled(runs, b, every) if every else kept(runs, b, kind, relative, count)
    both = pd.concat([share_a, share_b], axis=1, keys=["a", "b"]).dropna()
    made["placements"] = len(both)
    made["starved_a"] = int((both["a"] < starving).sum())
    made["starved_b"] = int((both["b"] < starving).sum()) if b else None
    if len(both) < 2:
        why = Reason("too_few", f"{len(both)} round(s) with both measured: no interval")
        return KeptComparison(outcome=Outcome.UNDETERMINED, reasons=(why,), **made)
    mean, low, high = t_interval((both["a"] - both["b"]).to_numpy(float))
    side = margins.side(low, high, margin, margins.Question.IN_ONE_RUN, margins.Scale.DIFFERENCE)
    return KeptComparison(
        outcome=margins.outcome(side, above=Outcome.HIGHER, below=Outcome.LOWER),
        estimate=mean,
        a_value=float(both["a"].median()),
        b_value=float(both["b"].median()),
        low=low,
        high=high,
        **made,
    )


def spared(comparison: Comparison) -> bool:
    """Behind the front in no placement starved, where bare some were (the placements the kernel chose)."""
    return bool(isinstance(comparison, KeptComparison) and comparison.starved_b and comparison.starved_a == 0)


def work(counted: Counted, a: str, b: str, config: dict, server_row) -> list[Comparison]:
    """Each counted figure (instructions, syscalls per request) behind the front (its own counted
    in) over bare, where the run counted both; each widened by the servers' declared spread."""
    rows = counted.rows[(counted.rows["profile"] == server_row["profile"]) & (counted.rows["server"].isin([a, b]))]
    figures = rows.set_index("server")
    if a not in figures.index or b not in figures.index:
        return []
    spread = max(server_entry(config, name).work_spread or 0.0 for name in (a, b))
    found = []
    for check in counted.checks:
        figure_a, figure_b = float(figures.loc[a, check.name]), float(figures.loc[b, check.name])
        if not figure_b > 0:
            continue
        made = _made(server_row, a, b, Metric.WORK, (("slow", SlowKind.NONE), ("count", check.name)), check.margin)
        ratio = figure_a / figure_b
        low, high = ratio / (1 + spread), ratio * (1 + spread)
        side = margins.side(low, high, check.margin, margins.Question.IN_ONE_RUN)
        found.append(
            Comparison(
                outcome=margins.outcome(side, above=Outcome.MORE_WORK, below=Outcome.LESS_WORK),
                estimate=ratio,
                a_value=figure_a,
                b_value=figure_b,
                low=low,
                high=high,
                **made,
            )
        )
    return found


def answer(comparisons: list[Comparison], fronted: bool) -> FrontAnswer:
    """A server's answer from its comparisons of the share kept beside slow clients."""
    kept_rows = [c for c in comparisons if c.metric == FrontMetric.KEPT]
    if fronted and any(c.outcome == Outcome.HIGHER or spared(c) for c in kept_rows):
        return FrontAnswer.NEEDS
    every = [c for c in kept_rows if c.b == ALONE and dict(c.condition)["slow"] == EVERY_SLOW_KIND]
    bare_lower = [c for c in kept_rows if c.b == ALONE and c.outcome == Outcome.LOWER]
    slow_lower = [c for c in bare_lower if dict(c.condition)["slow"] in (*SLOW_KINDS, EVERY_SLOW_KIND)]
    never_starved = bool(every) and not getattr(every[0], "starved_a", 0)
    if every and every[0].outcome == Outcome.EQUIVALENT and not slow_lower and never_starved:
        return FrontAnswer.NOT_NEEDED
    if fronted and kept_rows and all(c.outcome in (Outcome.EQUIVALENT, Outcome.LOWER) for c in kept_rows):
        return FrontAnswer.NOT_NEEDED
    return FrontAnswer.UNDETERMINED


def _server_comparisons(runs: pd.DataFrame, counted: Counted, config, spec: dict) -> list[Comparison]:
    server_row = runs.iloc[0]
    bare = server_row["server"]
    ok = runs[runs["deployment_status"] == Status.OK].dropna(subset=["kind"])
    slow = ok[ok["kind"] != SlowKind.NONE][SLOW_CONDITION].drop_duplicates().itertuples(index=False, name=None)
    conditions = [(kind, None if pd.isna(relative) else relative, count) for kind, relative, count in slow]
    fronts = [name for name in ok["deployment"].unique() if name != bare]
    found = [saving(ok, bare, None, condition, spec, server_row) for condition in conditions]
    every = (EVERY_SLOW_KIND, None, 0)
    pooling = any(condition[0] in SLOW_KINDS for condition in conditions)
    if pooling:
        found.append(saving(ok, bare, None, every, spec, server_row, every=conditions))
    for front in fronts:
        found.append(cost(ok, front, bare, float(spec["cost_margin"]), server_row))
        found.extend(saving(ok, front, bare, condition, spec, server_row) for condition in conditions)
        if pooling:
            found.append(saving(ok, front, bare, every, spec, server_row, every=conditions))
        found.extend(work(counted, front, bare, config, server_row))
    return found


def front_verdicts(table: pd.DataFrame, counted: Counted, config: dict) -> pd.DataFrame:
    """Every comparison of every server's front job, and its answer, as rows."""
    rows = []
    if table.empty:
        return pd.DataFrame(columns=["profile", "server", "answer"])
    for (profile, server), runs in table.groupby(["profile", "server"], sort=True):
        found = _server_comparisons(runs, counted, config, config["profiles"][profile]["front"])
        fronted = (
            runs["fronted"].astype(bool).any()
            and (runs[runs["fronted"].astype(bool)]["deployment_status"] == Status.OK).any()
        )
        said = answer(found, bool(fronted))
        rows.extend({**c.as_row(), "answer": said} for c in found)
        if not found:
            reason = runs.iloc[0]["deployment_reason"]
            rows.append({"profile": profile, "server": server, "answer": FrontAnswer.UNDETERMINED, "why": reason})
    return pd.DataFrame(rows)
