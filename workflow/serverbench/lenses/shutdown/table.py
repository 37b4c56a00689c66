"""shutdown.csv: a server stopped under load, one row per (profile, server, how, delay,
placement, handover): bare or behind the front, alone or replaced by a second instance.

Each row reads every stop of that kind: how many (``stops``), the requests lost per stop
(median and mean over the stops, and by client kind: kept-alive, fresh, open loop), each
outcome's requests per stop (``words.LOST``, a column each; ``refused`` the connections
refused, an open loop's requests each its own, ``refused_attempts`` every try), the seconds from
the signal to the listener gone, the last correct answer and the exit (medians), the exit codes
seen, how many stops the lens had to kill, what the long request met, and the open loop's rate
(median) and its longest lag (the most a due request waited for a sender: above the pace's
step, the loop was no longer open). A request is lost when it ended at or after the signal
without an answer; those that failed before it (``lost_before``, a control: none expected)
are counted apart. A server that could not be stopped so is a row with its status and reason.
Behind the front a request routed to the gone upstream is answered at once with a 502, and the
client sends the next: as a refusal, a connection's 502s after the signal count once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from serverbench import files
from serverbench.lenses.shutdown.words import LOST, Client, Handover, Met, Placement
from serverbench.record.vocabulary import Status

KEYS = ["profile", "server", "language", "how", "signal", "delay_s", "placement", "handover"]
LOST_COLUMNS = [str(met).replace(" ", "_") for met in LOST]
SHUTDOWN_COLUMNS = [
    *KEYS,
    "stops",
    "lost_per_stop",
    "lost_mean",
    *(f"lost_{client.name.lower()}" for client in Client),
    *LOST_COLUMNS,
    "refused_attempts",
    "lost_before",
    "listener_closed_s",
    "last_answer_s",
    "exited_s",
    "exit_codes",
    "killed",
    "long_request",
    "open_rate",
    "open_lag_s",
    "status",
    "reason",
]


def lost_after(stop: dict) -> list[dict]:
    """The stop's requests lost: ended at or after its signal without an answer, a connection's
    refusals once (a client refused tries again at once, as a balancer sends the next request:
    how often is the client's pace, not the server's; ``refused_attempts`` keeps them all)."""
    once = {Met.REFUSED, Met.BAD_STATUS} if placement_of(stop) == Placement.FRONTED else {Met.REFUSED}
    refused, lost = set(), []
    for one in stop["failures"]:
        if one["ended_s"] < 0:
            continue
        if one["met"] in once:
            if (one["met"], one["client"], one["connection"]) in refused:
                continue
            refused.add((one["met"], one["client"], one["connection"]))
        lost.append(one)
    return lost


def placement_of(stop: dict) -> str:
    """Where the stop's server stood (a record from before placements: bare)."""
    return stop.get("placement", Placement.BARE)


def handover_of(stop: dict) -> str:
    """What took over while it stopped (a record from before handovers: nothing)."""
    return stop.get("handover", Handover.NONE)


def way_of(stop: dict) -> tuple:
    """A stop's kind: (how, delay, placement, handover)."""
    return stop["how"], stop["delay_s"], placement_of(stop), handover_of(stop)


def alone(stop: dict) -> bool:
    """Bare, nothing taking over: the stops checks.py offers and the earlier tables read."""
    return placement_of(stop) == Placement.BARE and handover_of(stop) == Handover.NONE


def _median(values) -> float | None:
    data = [value for value in values if value is not None]
    return float(np.median(data)) if data else None


def _row(result: dict, stops: list[dict]) -> dict:
    first = stops[0]
    row = {key: result[key] for key in ("profile", "server", "language")}
    row.update(how=first["how"], signal=first["signal"], delay_s=first["delay_s"])
    row.update(placement=placement_of(first), handover=handover_of(first))
    done = [stop for stop in stops if stop["status"] == Status.OK]
    if not done:
        return {**row, "stops": 0, "status": first["status"], "reason": first["reason"]}
    lost = [lost_after(stop) for stop in done]
    per_kind = Counter(str(one["met"]).replace(" ", "_") for each in lost for one in each)
    per_client = Counter(one["client"] for each in lost for one in each)
    met = Counter((stop["long_request"] or {}).get("met") for stop in done if stop["long_request"])
    row.update(
        stops=len(done),
        lost_per_stop=_median(len(each) for each in lost),
        lost_mean=round(float(np.mean([len(each) for each in lost])), 4),
        **{f"lost_{client.name.lower()}": per_client[str(client)] / len(done) for client in Client},
        **{column: per_kind[column] / len(done) for column in LOST_COLUMNS},
        refused_attempts=sum(one["met"] == Met.REFUSED and one["ended_s"] >= 0 for s in done for one in s["failures"])
        / len(done),
        lost_before=sum(1 for stop in done for one in stop["failures"] if one["ended_s"] < 0),
        listener_closed_s=_median(stop["listener_closed_s"] for stop in done),
        last_answer_s=_median(stop["last_answer_s"] for stop in done),
        exited_s=_median(stop["exited_s"] for stop in done),
        exit_codes=" ".join(sorted({str(stop["exit_code"]) for stop in done})),
        killed=sum(bool(stop["killed"]) for stop in done),
        long_request="; ".join(f"{name} ×{count}" for name, count in sorted(met.items())) or None,
        open_rate=_median(stop.get("open_rate") for stop in done),
        open_lag_s=max((stop["open_lag_s"] for stop in done if stop.get("open_lag_s") is not None), default=None),
        status=Status.OK,
        reason="; ".join(dict.fromkeys(stop["reason"] for stop in done if stop["reason"])) or None,
    )
    return row


def result_rows(result: dict) -> list[dict]:
    """One server's rows: one per (how, delay, placement, handover) of its stops, or one saying
    why it has none."""
    if not result["stops"]:
        row = {key: result[key] for key in ("profile", "server", "language")}
        return [{**row, "stops": 0, "status": result["status"], "reason": result["reason"]}]
    groups: dict[tuple, list[dict]] = {}
    for stop in result["stops"]:
        groups.setdefault(way_of(stop), []).append(stop)
    return [_row(result, stops) for _, stops in sorted(groups.items())]


def shutdown_table(paths) -> pd.DataFrame:
    rows = [row for path in sorted(map(str, paths)) for row in result_rows(files.read_json(path))]
    return pd.DataFrame(rows, columns=SHUTDOWN_COLUMNS)


def write_shutdown(paths, out: str | Path) -> None:
    files.write_atomic(out, shutdown_table(paths).to_csv(index=False))
