"""overload_verdicts.csv: each server past its capacity judged by the one rule (``decide.margins``)
over its repeats, as the shutdown and recycle lenses judge theirs. A figure is the goodput of one
stretch at the judged multiple of capacity (``judged.multiple``, 2×) as capacity's share; each
(server, backlog, client) has ``judged.repeats`` of them. Their mean's percentile bootstrap
interval (``decide.bootstrap``, seeded so a table repeats; fewer than ``MIN_FIGURES`` figures:
undetermined, with why) is read against the settings' shares: wholly at or above
``hold_share`` it *holds*, wholly below ``collapse_share`` it *collapses*, wholly between them
it *sheds*; across a share it is undetermined (``words.GoodputClass``).

Beside it, per (server, backlog, client), the burst's recovery: its seconds, or *never
recovered* within the window; one burst a client, so shown, not judged. Per (server, client), its
own backlog against the set one on the same figures, a difference of the means within
±``judged.margin`` of capacity: *higher*, *lower*, *equivalent* or *undetermined*. A server's
releases (``plan.releases``) are judged the same way against each other on the figure the lens
offers them (``checks``): rows of kinds ``release`` and ``release step``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from serverbench import files
from serverbench.decide import bootstrap, margins
from serverbench.decide.judgement import Reason
from serverbench.lenses.overload.checks import check_table, figures_of, offered_figures
from serverbench.lenses.overload.table import hang_table, overload_table
from serverbench.lenses.overload.words import GoodputClass, OverloadKind, OverloadMetric, OverloadOutcome, Phase
from serverbench.plan.releases import release_pairs
from serverbench.record.vocabulary import Status

SEED = 20261202
MIN_FIGURES = bootstrap.MIN_FIGURES
CHECK, RECOVERY_CHECK, UNIT = "goodput_at_2x", "recovery_s", "of capacity"
SHOWN = Reason("shown", "one burst a client: its recovery shown, not judged")
VERDICT_COLUMNS = ["profile", "server", "backlog", "client", *bootstrap.CHECK_VERDICT_COLUMNS]


def classed(figures: list[float], holds: float, collapses: float) -> tuple[GoodputClass, bootstrap.Interval]:
    """The figures' class by the one rule against each share (the module's docstring)."""
    found = bootstrap.interval(figures, [0.0] * len(figures), bootstrap.Read.DIFFERENCE, SEED, MIN_FIGURES)
    if found.reason is not None:
        return GoodputClass.UNDETERMINED, found

    def against(share: float) -> margins.Side:
        low, high = found.low - share, found.high - share
        return margins.side(low, high, 0.0, margins.Question.IN_ONE_RUN, margins.Scale.DIFFERENCE)

    at_holds, at_collapses = against(holds), against(collapses)
    if at_holds == margins.Side.ABOVE:
        return GoodputClass.HOLDS, found
    if at_collapses == margins.Side.BELOW:
        return GoodputClass.COLLAPSES, found
    if at_holds == margins.Side.BELOW and at_collapses == margins.Side.ABOVE:
        return GoodputClass.SHEDS, found
    return GoodputClass.UNDETERMINED, found


def class_row(result: dict, condition: dict, client: str, judged: dict) -> dict:
    figures = figures_of(condition, client, judged["multiple"])
    found_class, found = classed(figures, judged["hold_share"], judged["collapse_share"])
    reasons = (found.reason,) if found.reason else ()
    comparison = bootstrap.CheckComparison(
        kind=OverloadKind.PAST_CAPACITY,
        a=f"{result['server']} {condition['backlog']} backlog {client} at {judged['multiple']:g}×",
        b=f"holds {judged['hold_share']:g}, collapses below {judged['collapse_share']:g} of capacity",
        metric=OverloadMetric.GOODPUT,
        condition=(("profile", result["profile"]), ("server", result["server"]), ("check", CHECK)),
        outcome=found_class.value,
        estimate=found.estimate,
        a_value=None if not figures else round(float(np.mean(figures)), 4),
        low=found.low,
        high=found.high,
        level=bootstrap.LEVEL,
        margin=0.0,
        reasons=reasons,
        check=CHECK,
        unit=UNIT,
        scale=bootstrap.Read.DIFFERENCE.value,
        n_a=len(figures),
        n_b=0,
    )
    return {**comparison.as_row(), "backlog": condition["backlog"], "client": client}


def recovery_row(result: dict, condition: dict, stretch: dict) -> dict:
    back = stretch.get("recovery_s")
    comparison = bootstrap.CheckComparison(
        kind=OverloadKind.PAST_CAPACITY,
        a=f"{result['server']} {condition['backlog']} backlog {stretch['client']} after the burst",
        b="the after-rate met again",
        metric=OverloadMetric.RECOVERY,
        condition=(("profile", result["profile"]), ("server", result["server"]), ("check", RECOVERY_CHECK)),
        outcome=OverloadOutcome.RECOVERED if back is not None else OverloadOutcome.NEVER_RECOVERED,
        a_value=back,
        reasons=(SHOWN,),
        check=RECOVERY_CHECK,
        unit="s",
        scale=bootstrap.Read.DIFFERENCE.value,
        n_a=1,
        n_b=0,
    )
    return {**comparison.as_row(), "backlog": condition["backlog"], "client": stretch["client"]}


def judge(rule: bootstrap.CheckRule, condition: tuple, a: tuple, b: tuple, kind) -> bootstrap.CheckComparison:
    return bootstrap.judge(
        rule, CHECK, a, b, SEED, MIN_FIGURES, condition=condition, kind=kind, metric=OverloadMetric.GOODPUT
    )


def backlog_rows(result: dict, judged: dict) -> list[dict]:
    """Per client, the server's own backlog against the set one, on goodput at the judged multiple."""
    by_backlog = {c["backlog"]: c for c in result["conditions"] if c["status"] == Status.OK}
    if not {"own", "set"} <= set(by_backlog):
        return []
    rule = bootstrap.CheckRule(UNIT, bootstrap.Read.DIFFERENCE.value, judged["margin"])
    condition = (("profile", result["profile"]), ("server", result["server"]))
    rows = []
    for client in result["settings"]["clients"]:
        own, told = (figures_of(by_backlog[b], client, judged["multiple"]) for b in ("own", "set"))
        name = f"{result['server']} {client}"
        found = judge(
            rule, condition, (f"{name} own backlog", own), (f"{name} set backlog", told), OverloadKind.BACKLOG
        )
        rows.append({**found.as_row(), "client": client})
    return rows


def server_rows(result: dict) -> list[dict]:
    """One record's verdicts: a class and a recovery per (backlog, client), own against set per client."""
    judged = result["settings"].get("judged")
    if not judged or result["status"] != Status.OK:
        return []
    rows = []
    for condition in result["conditions"]:
        if condition["status"] != Status.OK:
            continue
        rows += [class_row(result, condition, client, judged) for client in result["settings"]["clients"]]
        rows += [recovery_row(result, condition, s) for s in condition["stretches"] if s["phase"] == Phase.BURST]
    return rows + backlog_rows(result, judged)


def release_rows(results: list[dict], config: dict) -> list[dict]:
    """Each profile's releases of a server, release against baseline and against the one before
    it, on the figures the lens offers them (``checks.offered_figures``)."""
    rows = []
    by_profile: dict[str, dict[str, list[float]]] = {}
    margin_of: dict[str, float] = {}
    for result in results:
        figures = offered_figures(result)
        if figures:
            by_profile.setdefault(result["profile"], {})[result["server"]] = figures
            margin_of[result["profile"]] = result["settings"]["judged"]["margin"]
    for profile, servers in sorted(by_profile.items()):
        rule = bootstrap.CheckRule(UNIT, bootstrap.Read.DIFFERENCE.value, margin_of[profile])
        for kind, a, b in release_pairs(config, sorted(servers)):
            condition = (("profile", profile), ("server", a))
            rows.append(judge(rule, condition, (a, servers[a]), (b, servers[b]), kind).as_row())
    return rows


def overload_verdict_table(results: list[dict], config: dict | None = None) -> pd.DataFrame:
    """overload_verdicts.csv (the module's docstring; ``estimate`` a-b)."""
    rows = [row for result in results for row in server_rows(result)]
    rows += release_rows(results, config) if config else []
    for row in rows:
        row["estimate"] = row.pop("ratio")
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    """The lens's table job (its TableJob's entry, called by workflow/scripts/lens_job.py): the
    records merged into overload.csv, the checks it offers, overload_checks.csv, its verdicts,
    overload_verdicts.csv, and the hung requests, overload_hang.csv."""
    results = [files.read_json(path) for path in sorted(map(str, records))]
    files.write_atomic(outputs["table"], overload_table(results).to_csv(index=False))
    files.write_atomic(outputs["checks"], check_table(results).to_csv(index=False))
    files.write_atomic(outputs["verdicts"], overload_verdict_table(results, config).to_csv(index=False))
    files.write_atomic(outputs["hang"], hang_table(results).to_csv(index=False))
