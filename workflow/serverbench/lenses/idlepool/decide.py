"""Which balancer idle timeout is safe? The records as tables (declared columns), and failed
reuses judged by the one rule (``decide.margins`` through ``decide.bootstrap``, as the shutdown
lens judges its stops).

Each reuse is a figure: 1 where it failed (reset, closed before the answer, timed out, a bad
status: what a balancer answers 502 for), 0 where it was answered or seen closed before the send
(retried on a new connection). Per (server, deployment, keep-alive), the share failed at each
idle time against the share at the shortest idle time swept (the race: *higher*), and at the
raised keep-alive against the default at the same idle time (raising it closes the window:
*lower*), a difference of the means read against the profile's ``margin``. A reuse never made (a
connection the server would not keep: ``not kept``) is no figure. A server's releases (kinds
``release`` and ``release step``) are judged alike on the check it offers to releases
(``checks``: the failed reuses at the longest idle time below its keep-alive).

The answer per (server, deployment): the race window (idle times judged *higher* than the
shortest), the largest balancer idle timeout that is safe at its own keep-alive (the longest idle
time below the first judged higher or undetermined), whether the raised keep-alive closes the
window, behind a front whether it removes the race (none of the reuses that fail bare fail
through it), and how many idle connections starve a fresh client.
"""

from __future__ import annotations

import pandas as pd

from serverbench import files
from serverbench.decide import bootstrap
from serverbench.decide.judgement import HIGHER, LOWER
from serverbench.lenses.idlepool.checks import CHECK_UNITS, FAILED_CHECK, check_table, figures, offered_row
from serverbench.lenses.idlepool.pool import Reuse
from serverbench.lenses.idlepool.sweep import DEFAULT, RAISED, REUSE_COLUMNS
from serverbench.lenses.idlepool.words import IdlePoolKind, IdlePoolMetric
from serverbench.plan.releases import release_pairs
from serverbench.record.vocabulary import Outcome, Status

SEED = 20261203
CHECK, UNIT = FAILED_CHECK, CHECK_UNITS[FAILED_CHECK]
KEY = ["profile", "server", "deployment", "keepalive"]
SWEEP_COLUMNS = [*KEY, "language", "keepalive_s", "idle_s", *REUSE_COLUMNS]
COST_COLUMNS = ["profile", "server", "deployment", "held", "pre_opened", "fresh", "wait_s"]
DEPLOYMENT_COLUMNS = ["profile", "server", "deployment", "keepalive", "keepalive_s", "status", "reason"]
VERDICT_COLUMNS = ["profile", "server", "deployment", "keepalive", "idle_s", *bootstrap.CHECK_VERDICT_COLUMNS]
ANSWER_COLUMNS = [
    "profile",
    "server",
    "deployment",
    "keepalive_s",
    "keepalive_setting",
    "race_window_s",
    "safe_idle_timeout_s",
    "closed_first_s",
    "never_kept",
    "raised_keepalive_s",
    "raised_closes_window",
    "front_removes_race",
    "starved_beside",
    "status",
    "reason",
]


def tables(records: list[dict]) -> dict[str, pd.DataFrame]:
    """The sweeps, costs and deployments of every record, with its profile and server."""
    sweeps, costs, deployments = [], [], []
    for record in records:
        mine = {"profile": record["profile"], "server": record["server"]}
        sweeps += [{**mine, "language": record["language"], **row} for row in record["sweeps"]]
        costs += [{**mine, **row} for row in record["costs"]]
        deployments += [
            {**mine, **{("deployment" if k == "name" else k): v for k, v in d.items()}} for d in record["deployments"]
        ]
        if not record["deployments"]:
            deployments.append(
                {**mine, "deployment": record["server"], "status": record["status"], "reason": record["reason"]}
            )
    return {
        "sweeps": pd.DataFrame(sweeps, columns=SWEEP_COLUMNS),
        "costs": pd.DataFrame(costs, columns=COST_COLUMNS),
        "deployments": pd.DataFrame(deployments, columns=DEPLOYMENT_COLUMNS),
    }


def judge(
    condition: tuple, a: tuple[str, list], b: tuple[str, list], margin: float, kind: str = IdlePoolKind.IDLE_POOL
) -> bootstrap.CheckComparison:
    rule = bootstrap.CheckRule(UNIT, bootstrap.Read.DIFFERENCE.value, margin)
    return bootstrap.judge(rule, CHECK, a, b, SEED, condition=condition, kind=kind, metric=IdlePoolMetric.FAILED_REUSES)


def release_comparisons(records: list[dict], config: dict, margins: dict[str, float]) -> list[tuple[dict, object]]:
    """Each profile's releases of a server, release against baseline and release against the one
    before it (``plan.releases``), on the failed reuses at the check's idle time (``checks``)."""
    found = []
    by_profile: dict[str, dict[str, tuple[float, list[float]]]] = {}
    for record in records:
        row = offered_row(record) if record["status"] == Status.OK else None
        if row is not None and figures(row):
            by_profile.setdefault(record["profile"], {})[record["server"]] = (row["idle_s"], figures(row))
    for profile, servers in sorted(by_profile.items()):
        for kind, a, b in release_pairs(config, sorted(servers)):
            (idle_a, figures_a), (_, figures_b) = servers[a], servers[b]
            where = {"profile": profile, "server": a, "deployment": a, "keepalive": DEFAULT, "idle_s": idle_a}
            condition = (("profile", profile), ("server", a))
            found.append((where, judge(condition, (a, figures_a), (b, figures_b), margins[profile], kind=kind)))
    return found


def judged(sweeps: pd.DataFrame, margins: dict[str, float]) -> list[tuple[dict, bootstrap.CheckComparison]]:
    """Each idle time against the shortest, and the raised keep-alive against the default."""
    found = []
    for (profile, server, deployment), rows in sweeps.groupby(["profile", "server", "deployment"], sort=True):
        margin = margins[profile]
        by_setting = {setting: part.sort_values("idle_s") for setting, part in rows.groupby("keepalive")}
        for setting, part in by_setting.items():
            shortest = part.iloc[0]
            for _, row in part.iloc[1:].iterrows():
                where = {
                    "profile": profile,
                    "server": server,
                    "deployment": deployment,
                    "keepalive": setting,
                    "idle_s": row["idle_s"],
                }
                condition = tuple(where.items())
                a = (f"{deployment} idle {row['idle_s']:g} s", figures(row))
                b = (f"{deployment} idle {shortest['idle_s']:g} s", figures(shortest))
                found.append((where, judge(condition, a, b, margin)))
        if RAISED in by_setting and DEFAULT in by_setting:
            default = by_setting[DEFAULT].set_index("idle_s")
            for _, row in by_setting[RAISED].iterrows():
                if row["idle_s"] not in default.index:
                    continue
                where = {
                    "profile": profile,
                    "server": server,
                    "deployment": deployment,
                    "keepalive": RAISED,
                    "idle_s": row["idle_s"],
                }
                a = (f"{deployment} raised keep-alive, idle {row['idle_s']:g} s", figures(row))
                b = (f"{deployment} own keep-alive, idle {row['idle_s']:g} s", figures(default.loc[row["idle_s"]]))
                found.append(({**where, "against": DEFAULT}, judge(tuple(where.items()), a, b, margin)))
    return found


def verdict_table(found) -> pd.DataFrame:
    rows = []
    for where, comparison in found:
        row = comparison.as_row()
        row["estimate"] = row.pop("ratio")
        rows.append({**row, **{k: v for k, v in where.items() if k != "against"}})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _safe(own: pd.DataFrame, idle_times: list[float]) -> tuple[list[float], float | None]:
    """The idle times judged higher than the shortest, and the longest idle time before the first
    one judged anything but equivalent or lower (the shortest itself is safe where nothing failed)."""
    outcomes = dict(zip(own["idle_s"], own["outcome"], strict=True))
    window = [idle for idle in idle_times if outcomes.get(idle) == HIGHER]
    safe = None
    for idle in idle_times:
        if idle == idle_times[0] or outcomes.get(idle) in (Outcome.EQUIVALENT, LOWER):
            safe = idle
            continue
        break
    return window, safe


def _pool_kept(own_sweep: pd.DataFrame) -> tuple[float | None, bool]:
    """At its own keep-alive: the shortest idle time at which the server had closed a pooled
    connection cleanly before the send (it closed first: a balancer sees the FIN and reconnects),
    and whether it kept no connection at all (every first answer said `Connection: close`)."""
    closed = own_sweep[own_sweep[str(Reuse.CLOSED_BEFORE_SEND)] > 0]["idle_s"]
    never_kept = bool(len(own_sweep)) and bool((own_sweep[str(Reuse.NOT_KEPT)] == reuses_of(own_sweep)).all())
    return (float(closed.min()) if len(closed) else None), never_kept


def reuses_of(sweep: pd.DataFrame) -> pd.Series:
    """Each idle time's reuses tried: the sum of its outcome counts."""
    return sweep[REUSE_COLUMNS].sum(axis=1)


def answers(t: dict[str, pd.DataFrame], verdicts: pd.DataFrame, records: list[dict]) -> pd.DataFrame:
    """A row per (server, deployment): the race window, the safe idle timeout, the raised keep-alive's
    effect and the cost, from the judgements."""
    settings = {record["server"]: record.get("keepalive_setting") for record in records}
    rows = []
    for _, deployed in t["deployments"].iterrows():
        if deployed["keepalive"] == RAISED:
            continue
        mine = {"profile": deployed["profile"], "server": deployed["server"], "deployment": deployed["deployment"]}
        at = (verdicts["server"] == mine["server"]) & (verdicts["deployment"] == mine["deployment"])
        swept = t["sweeps"][
            (t["sweeps"]["server"] == mine["server"]) & (t["sweeps"]["deployment"] == mine["deployment"])
        ]
        idle_times = sorted(swept[swept["keepalive"] == DEFAULT]["idle_s"])
        own = verdicts[at & (verdicts["keepalive"] == DEFAULT)]
        window, safe = _safe(own, idle_times) if idle_times else ([], None)
        closed_first, never_kept = _pool_kept(swept[swept["keepalive"] == DEFAULT])
        raised = verdicts[at & (verdicts["keepalive"] == RAISED) & verdicts["a"].str.contains("raised")]
        raised_s = swept[swept["keepalive"] == RAISED]["keepalive_s"]
        closes = None
        if window and len(raised):
            closes = bool((raised[raised["idle_s"].isin(window)]["outcome"] == LOWER).all())
        costs = t["costs"][(t["costs"]["server"] == mine["server"]) & (t["costs"]["deployment"] == mine["deployment"])]
        starved = costs[costs["fresh"] == "starved"]
        rows.append(
            {
                **mine,
                "keepalive_s": deployed["keepalive_s"],
                "keepalive_setting": settings.get(mine["server"]),
                "race_window_s": " ".join(f"{idle:g}" for idle in window),
                "safe_idle_timeout_s": safe,
                "closed_first_s": closed_first,
                "never_kept": never_kept,
                "raised_keepalive_s": float(raised_s.iloc[0]) if len(raised_s) else None,
                "raised_closes_window": closes,
                "starved_beside": int(starved["held"].min()) if len(starved) else None,
                "status": deployed["status"],
                "reason": deployed["reason"],
            }
        )
    return _front_removes_race(pd.DataFrame(rows, columns=ANSWER_COLUMNS))


def _front_removes_race(found: pd.DataFrame) -> pd.DataFrame:
    """Each deployment behind a front: True where the server bare has a race window and no reuse
    failed through the front, False where one still did; None where there was no race to remove
    (bare, or a deployment not swept)."""
    bare = found[found["deployment"] == found["server"]].set_index(["profile", "server"])

    def removes(row: pd.Series):
        if row["deployment"] == row["server"] or row["status"] != Status.OK:
            return None
        own = bare["race_window_s"].get((row["profile"], row["server"]))
        if not isinstance(own, str) or not own:
            return None
        return not row["race_window_s"]

    found["front_removes_race"] = [removes(row) for _, row in found.iterrows()] if len(found) else []
    return found


def write_tables(config: dict, records: list[str], outputs: dict[str, str]) -> None:
    """The lens's table job (its TableJob's entry): idle_pool.csv (every idle time's reuses),
    idle_pool_costs.csv, idle_pool_checks.csv (what it offers to releases), idle_pool_verdicts.csv
    (each judgement, the releases' among them) and idle_pool_answers.csv."""
    results = [files.read_json(path) for path in sorted(map(str, records))]
    t = tables(results)
    margins = {name: float((p.get("idle_pool") or {}).get("margin", 0.25)) for name, p in config["profiles"].items()}
    verdicts = verdict_table(judged(t["sweeps"], margins) + release_comparisons(results, config, margins))
    files.write_atomic(outputs["table"], t["sweeps"].to_csv(index=False))
    files.write_atomic(outputs["costs"], t["costs"].to_csv(index=False))
    files.write_atomic(outputs["checks"], check_table(results).to_csv(index=False))
    files.write_atomic(outputs["verdicts"], verdicts.to_csv(index=False))
    files.write_atomic(outputs["answers"], answers(t, verdicts, results).to_csv(index=False))
