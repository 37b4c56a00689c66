"""A server's stops judged within the server, through the one rule (``decide.margins``) as the
operations lens judges its checks: the requests lost per stop of its graceful stop against its
fast one (at the first delay), of each longer delay against the first (the balancer still
routing to it against not), of its drain (its own "stop accepting" first) against its
graceful signal alone at each delay, and at the delay of the stops behind the front and the
replacements (``handover_pairs``): behind the front against bare, replaced through SO_REUSEPORT
against the stop alone, and replaced behind the front with the front's retry against without.
Each side's figures are its stops' counts; the interval is a
percentile bootstrap of the difference of the means (``decide.bootstrap``, seeded so a table
repeats; a side with fewer than ``MIN_FIGURES`` stops is undetermined, with why), read against
a margin of half a request a stop: *higher*, *lower*, *equivalent* or *undetermined*.

A server's releases (``plan.releases``: kinds ``release`` and ``release step``) are judged by the
same rule against each other, each side its graceful stops with no delay (``checks``): the check
the lens offers to releases and bisect, rows whose ``a`` and ``b`` are the releases.
"""

from __future__ import annotations

import pandas as pd

from serverbench import files
from serverbench.decide import bootstrap
from serverbench.lenses.shutdown.checks import check_table, offered_stops
from serverbench.lenses.shutdown.table import lost_after, way_of, write_shutdown
from serverbench.lenses.shutdown.words import Handover, How, Placement, ShutdownKind, ShutdownMetric
from serverbench.plan.releases import release_pairs
from serverbench.record.vocabulary import Status

SEED = 20261202
MIN_FIGURES = bootstrap.MIN_FIGURES
CHECK, UNIT = "lost_per_stop", "requests lost per stop"
MARGIN = 0.5  # half a request a stop: a stop that loses one request more is told apart
# A difference of the stops' means, read against the margin in requests.
RULE = bootstrap.CheckRule(UNIT, bootstrap.Read.DIFFERENCE.value, MARGIN)


# How a stop's placement and handover read after its label (bare and alone: nothing).
WAY_WORDS = {
    (Placement.BARE, Handover.NONE): "",
    (Placement.FRONTED, Handover.NONE): ", behind the front",
    (Placement.BARE, Handover.REUSE_PORT): ", replaced through SO_REUSEPORT",
    (Placement.FRONTED, Handover.UPSTREAM_RETRY): ", replaced as a second upstream, retried",
    (Placement.FRONTED, Handover.UPSTREAM_NO_RETRY): ", replaced as a second upstream, not retried",
}
ALONE = (Placement.BARE, Handover.NONE)


def label(server: str, how: str, delay_s: float, placement: str = Placement.BARE, handover: str = Handover.NONE) -> str:
    return f"{server} {how}, {delay_s:g} s routed{WAY_WORDS[Placement(placement), Handover(handover)]}"


def judge(
    condition: tuple, a: tuple[str, list], b: tuple[str, list], kind: str = ShutdownKind.STOP
) -> bootstrap.CheckComparison:
    """``a`` against ``b``: each (label, its stops' lost requests), by the one bootstrap rule."""
    return bootstrap.judge(
        RULE,
        CHECK,
        a,
        b,
        SEED,
        MIN_FIGURES,
        condition=condition,
        kind=kind,
        metric=ShutdownMetric.SHUTDOWN,
    )


def pairs_of(kinds: dict[tuple[str, float], list[float]]) -> list[tuple[tuple, tuple]]:
    """Which (how, delay) is judged against which: graceful against fast at the first delay of
    both, each longer delay of a stop against its first, and the drain against the graceful
    signal alone at each delay of both."""
    found = []
    delays = {how: sorted(delay for kind, delay in kinds if kind == how) for how in (How.GRACEFUL, How.FAST)}
    if delays[How.GRACEFUL] and delays[How.FAST]:
        shared = sorted(set(delays[How.GRACEFUL]) & set(delays[How.FAST]))
        if shared:
            found.append(((How.GRACEFUL, shared[0]), (How.FAST, shared[0])))
    for how, seen in delays.items():
        found += [((how, delay), (how, seen[0])) for delay in seen[1:]]
    drained = sorted(delay for kind, delay in kinds if kind == How.DRAIN)
    found += [((How.DRAIN, delay), (How.GRACEFUL, delay)) for delay in drained if delay in delays[How.GRACEFUL]]
    return found


# Each (placement, handover) judged against which, at the same stop and delay, and the kind.
HANDOVER_PAIRS = (
    ((Placement.FRONTED, Handover.NONE), ALONE, ShutdownKind.FRONTED_STOP),
    ((Placement.BARE, Handover.REUSE_PORT), ALONE, ShutdownKind.REPLACEMENT),
    (
        (Placement.FRONTED, Handover.UPSTREAM_RETRY),
        (Placement.FRONTED, Handover.UPSTREAM_NO_RETRY),
        ShutdownKind.UPSTREAM_RETRY,
    ),
)


def handover_pairs(kinds: dict[tuple, list[float]]) -> list[tuple[tuple, tuple, ShutdownKind]]:
    """Behind the front against bare, replaced through SO_REUSEPORT against alone, the front's
    retry against none: each where both sides were stopped the same way at the same delay."""
    return [
        ((how, delay, *a), (how, delay, *b), kind)
        for a, b, kind in HANDOVER_PAIRS
        for how, delay, *way in sorted(kinds)
        if tuple(way) == a and (how, delay, *b) in kinds
    ]


def comparisons(result: dict) -> list[bootstrap.CheckComparison]:
    """One server's record: its declared pairs of stops, on the requests each lost."""
    ways: dict[tuple, list[float]] = {}
    for stop in result["stops"]:
        if stop["status"] == Status.OK:
            how, delay, placement, handover = way_of(stop)
            ways.setdefault((How(how), delay, Placement(placement), Handover(handover)), []).append(
                float(len(lost_after(stop)))
            )
    kinds = {(how, delay): lost for (how, delay, *way), lost in ways.items() if tuple(way) == ALONE}
    condition = (("profile", result["profile"]), ("server", result["server"]))
    server = result["server"]
    found = [judge(condition, (label(server, *a), kinds[a]), (label(server, *b), kinds[b])) for a, b in pairs_of(kinds)]
    return found + [
        judge(condition, (label(server, *a), ways[a]), (label(server, *b), ways[b]), kind=kind)
        for a, b, kind in handover_pairs(ways)
    ]


def release_comparisons(results: list[dict], config: dict) -> list[bootstrap.CheckComparison]:
    """Each profile's releases of a server, release against baseline and release against the one
    before it, on the requests each lost per graceful stop with no delay (``checks``)."""
    found = []
    by_profile: dict[str, dict[str, list[float]]] = {}
    for result in results:
        lost = [float(len(lost_after(stop))) for stop in offered_stops(result)]
        if lost:
            by_profile.setdefault(result["profile"], {})[result["server"]] = lost
    for profile, servers in sorted(by_profile.items()):
        for kind, a, b in release_pairs(config, sorted(servers)):
            condition = (("profile", profile), ("server", a))
            found.append(judge(condition, (a, servers[a]), (b, servers[b]), kind=kind))
    return found


VERDICT_COLUMNS = ["profile", "server", *bootstrap.CHECK_VERDICT_COLUMNS]


def shutdown_verdict_table(results: list[dict], config: dict | None = None) -> pd.DataFrame:
    """shutdown_verdicts.csv: a row per judged pair of one server's stops, then of its releases
    where ``config`` declares them (``estimate`` a-b)."""
    judged = [comparison for result in results for comparison in comparisons(result)]
    judged += release_comparisons(results, config) if config else []
    rows = [comparison.as_row() for comparison in judged]
    for row in rows:
        row["estimate"] = row.pop("ratio")
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    """The lens's table job (its TableJob's entry, called by workflow/scripts/lens_job.py): the
    results merged into shutdown.csv, the checks it offers, shutdown_checks.csv, and each server's
    stops and releases judged, shutdown_verdicts.csv."""
    write_shutdown(records, outputs["table"])
    results = [files.read_json(path) for path in sorted(map(str, records))]
    files.write_atomic(outputs["checks"], check_table(results).to_csv(index=False))
    files.write_atomic(outputs["verdicts"], shutdown_verdict_table(results, config).to_csv(index=False))
