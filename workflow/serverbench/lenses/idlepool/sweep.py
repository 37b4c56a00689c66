"""Which balancer idle timeout is safe? The balancer's idle pool (pool.py) swept across and
around a server's keep-alive, read as a table and a verdict per (server, deployment), and shown
as a section of the typed model.

A sweep's rows (``sweep``): one per (keep-alive setting, idle time), the reuses' counts by what
they met; the cost rows (``cost``): idle connections held beside a fresh client. The verdict per
server and deployment (``verdicts``): the race window at its default keep-alive, the largest
balancer idle timeout that is safe there, whether its raised keep-alive closes the window, and
how many idle connections starve a fresh client.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from serverbench.lens import Medium, Paragraph, Section, Sentences, Table
from serverbench.lenses.idlepool.pool import (
    Fresh,
    Pool,
    Reuse,
    fresh_client_beside,
    idle_times,
    race_window,
    reuse_after,
    safe_idle_timeout,
)

TITLE = "Which balancer idle timeout is safe?"
DEFAULT, RAISED = "default", "raised"  # the server's keep-alive: its own default, or one set higher
REUSE_COLUMNS = [str(outcome) for outcome in Reuse]
LEAD = (
    "Connections a balancer pools are answered once, held idle, then reused after each idle time; "
    "a reuse reset or closed before its answer is a 502 at the balancer, one seen closed before the "
    "send is retried on a new connection. The safe balancer idle timeout is the largest idle time "
    "up to which no reuse failed."
)


def sweep(
    pool: Pool,
    server: str,
    deployment: str,
    keepalive: str,
    keepalive_s: float,
    connections: int,
    factors: Iterable[float],
) -> list[dict]:
    """A row per idle time around ``keepalive_s``: the reuses of ``connections`` pooled ones."""
    rows = []
    for idle_s in idle_times(keepalive_s, factors):
        counts = reuse_after(pool, idle_s, connections)
        rows.append(
            {
                "server": server,
                "deployment": deployment,
                "keepalive": keepalive,
                "keepalive_s": keepalive_s,
                "idle_s": idle_s,
                **{column: counts.get(Reuse(column), 0) for column in REUSE_COLUMNS},
            }
        )
    return rows


def cost(pool: Pool, server: str, deployment: str, holds: int, wait_s: float, pre_opened: bool) -> list[dict]:
    """A fresh client beside ``holds - 1`` and ``holds`` idle connections (the requests the
    server holds at once: workers × threads): answered, and its wait, or starved."""
    rows = []
    for held in (holds - 1, holds):
        fresh = fresh_client_beside(pool, held, wait_s, pre_opened)
        rows.append(
            {
                "server": server,
                "deployment": deployment,
                "held": held,
                "pre_opened": pre_opened,
                "fresh": str(fresh.got),
                "wait_s": fresh.wait_s,
            }
        )
    return rows


def _swept(rows: pd.DataFrame) -> dict[float, dict[Reuse, int]]:
    return {row["idle_s"]: {Reuse(column): int(row[column]) for column in REUSE_COLUMNS} for _, row in rows.iterrows()}


def verdicts(sweeps: pd.DataFrame, costs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (server, deployment): the race window and the safe idle timeout at its default keep-alive,
    whether the raised keep-alive has no failed reuse at the same idle times, and the fewest idle
    connections held beside which a fresh client was starved (empty: never)."""
    found = []
    for (server, deployment), rows in sweeps.groupby(["server", "deployment"], sort=False):
        default = rows[rows["keepalive"] == DEFAULT]
        raised = rows[rows["keepalive"] == RAISED]
        window = race_window(_swept(default))
        row = {
            "server": server,
            "deployment": deployment,
            "keepalive_s": default["keepalive_s"].iloc[0],
            "race_window_s": " ".join(f"{idle:g}" for idle in window),
            "safe_idle_timeout_s": safe_idle_timeout(_swept(default)),
            "raised_keepalive_s": raised["keepalive_s"].iloc[0] if not raised.empty else None,
            "raised_closes_window": (not race_window(_swept(raised))) if not raised.empty else None,
        }
        if costs is not None:
            mine = costs[(costs["server"] == server) & (costs["deployment"] == deployment)]
            starved = mine[mine["fresh"] == str(Fresh.STARVED)]
            row["starved_beside"] = int(starved["held"].min()) if not starved.empty else None
        found.append(row)
    return pd.DataFrame(found)


def _sentence(row: pd.Series) -> str:
    where = f"{row['server']} ({row['deployment']})"
    if not row["race_window_s"]:
        said = f"{where}: no reuse failed at any idle time swept around its {row['keepalive_s']:g} s keep-alive"
    else:
        safe = row["safe_idle_timeout_s"]
        said = (
            f"{where}: reuses fail at idle {row['race_window_s']} s against its {row['keepalive_s']:g} s "
            f"keep-alive; a balancer idle timeout is safe up to "
            f"{'none swept' if pd.isna(safe) else f'{safe:g} s'}"
        )
    if row.get("raised_closes_window") is not None and not pd.isna(row["raised_closes_window"]):
        closes = "closes" if row["raised_closes_window"] else "does not close"
        said += f"; raising its keep-alive to {row['raised_keepalive_s']:g} s {closes} the window"
    starved = row.get("starved_beside")
    if starved is not None and not pd.isna(starved):
        said += f"; {int(starved)} idle connections starve a fresh client"
    return said + "."


def idle_pool_section(sweeps: pd.DataFrame, costs: pd.DataFrame | None = None) -> Section | None:
    """The sweep as a table, and a sentence per (server, deployment)."""
    if sweeps.empty:
        return None
    judged = verdicts(sweeps, costs)
    columns = ["server", "deployment", "keepalive", "keepalive_s", "idle_s", *REUSE_COLUMNS]
    shown = [column for column in columns if column in columns[:5] or sweeps[column].any()]
    rows = [
        [f"{value:g}" if isinstance(value, float) else str(value) for value in found]
        for found in sweeps[shown].itertuples(index=False)
    ]
    return Section(
        TITLE,
        (
            Paragraph(LEAD, Medium.PAGE),
            Sentences([_sentence(row) for _, row in judged.iterrows()]),
            Table(tuple(shown), tuple(map(tuple, rows)), classes="sortable idle-pool", labelled=True),
        ),
        anchor="idle-pool",
    )
