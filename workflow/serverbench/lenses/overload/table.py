"""overload.csv: each server past its capacity, one row per (profile, server, backlog, client,
phase, multiple, repeat): the capacity it went past, the rate offered, the client's connections, the
rates scheduled and sent (``client_limited`` where the sent fell short of the scheduled by more
than the stated share), every request by what it met (words.Met, a column each), goodput
(answers within the objective per second of the stretch; as offered's share, the requests due
answered within it; as capacity's share), the p99 of what was answered, the server's side (the
accept queue's deepest sample; its processes' CPU as a percent of one CPU, their peak PSS in
MiB, their count), and after the burst the seconds until the after-rate was met again
(``recovered`` false: never within the window). A condition not measured or failed is one row
with its status and reason. The lens's table job (its TableJob's entry, decide.write_tables) writes
it, and overload_hang.csv beside it (hang_table)."""

from __future__ import annotations

import pandas as pd

from serverbench.lenses.overload.words import Met
from serverbench.record.vocabulary import Status

KEYS = ["profile", "server", "language", "backlog", "client", "phase", "multiple", "repeat"]
MET_COLUMNS = [str(met).replace(" ", "_") for met in Met]
OVERLOAD_COLUMNS = [
    *KEYS,
    "listen_backlog",
    "capacity_rps",
    "rate",
    "seconds",
    "due",
    "connections",
    "offered_rate",
    "sent_rate",
    "client_limited",
    *MET_COLUMNS,
    "goodput_rps",
    "goodput_of_offered",
    "goodput_of_capacity",
    "answered_p99_ms",
    "queue_max",
    "server_cpu_percent",
    "server_pss_peak_mb",
    "server_processes",
    "recovery_s",
    "recovered",
    "status",
    "reason",
]


STRETCH_KEYS = (
    "client",
    "phase",
    "multiple",
    "repeat",
    "rate",
    "seconds",
    "due",
    "connections",
    "offered_rate",
    "sent_rate",
    "client_limited",
    "answered_p99_ms",
    "goodput_rps",
    "queue_max",
    "recovery_s",
    "recovered",
)


def server_columns(side: dict) -> dict:
    """The server's processes over a stretch: CPU (percent of one CPU), peak PSS (MiB), processes."""
    pss = side.get("pss_peak_bytes")
    return {
        "server_cpu_percent": side.get("cpu_percent"),
        "server_pss_peak_mb": None if pss is None else round(pss / 2**20, 1),
        "server_processes": side.get("processes_max"),
    }


def rows_of(result: dict) -> list[dict]:
    """A record's rows (the module's docstring)."""
    base = {key: result[key] for key in ("profile", "server", "language")}
    rows = []
    for condition in result["conditions"] or [{"backlog": None, "status": result["status"], "stretches": []}]:
        head = {
            **base,
            "backlog": condition["backlog"],
            "listen_backlog": condition.get("listen_backlog"),
            "capacity_rps": condition.get("capacity_rps"),
        }
        if condition["status"] != Status.OK or not condition["stretches"]:
            rows.append({**head, "status": condition["status"], "reason": condition.get("reason") or result["reason"]})
            continue
        for stretch in condition["stretches"]:
            goodput, capacity = stretch["goodput_rps"], condition["capacity_rps"]
            within = stretch["counts"].get(str(Met.WITHIN), 0)
            rows.append(
                {
                    **head,
                    **{key: stretch.get(key) for key in STRETCH_KEYS},
                    **{
                        column: stretch["counts"].get(str(met), 0) for column, met in zip(MET_COLUMNS, Met, strict=True)
                    },
                    "goodput_of_offered": round(within / stretch["due"], 4) if stretch["due"] else None,
                    "goodput_of_capacity": round(goodput / capacity, 4) if capacity else None,
                    **server_columns(stretch.get("server_side") or {}),
                    "status": Status.OK,
                }
            )
    return rows


def overload_table(results: list[dict]) -> pd.DataFrame:
    rows = [row for result in results for row in rows_of(result)]
    return pd.DataFrame(rows, columns=OVERLOAD_COLUMNS).sort_values(KEYS[:5], kind="stable", ignore_index=True)


# overload_hang.csv: a row per (profile, server, timeout): the request timeout in force (None:
# none), the hung requests by what their clients got (answered_500, reset, timed_out...: a column
# each where seen) and the median seconds until, how many the server ended before the client's
# limit (`freed`), and the rest's goodput with the hangs against the same rest without them.
HANG_KEYS = ["profile", "server", "language", "timeout"]
HANG_COLUMNS = [
    *HANG_KEYS,
    "timeout_s",
    "per_request",
    "capacity_rps",
    "rate",
    "seconds",
    "hung",
    "freed",
    "hung_outcomes",
    "hung_ended_s",
    "rest_goodput_rps",
    "baseline_goodput_rps",
    "rest_lost",
    "status",
    "reason",
]


def hang_rows(result: dict) -> list[dict]:
    base = {key: result[key] for key in ("profile", "server", "language")}
    rows = []
    for run in result.get("hangs") or ():
        good, baseline = run.get("rest_goodput_rps"), run.get("baseline_goodput_rps")
        rows.append(
            {
                **base,
                **{key: run.get(key) for key in HANG_COLUMNS if key in run and key not in ("hung", "hung_ended_s")},
                "hung": sum((run.get("hung") or {}).values()) if run["status"] == Status.OK else None,
                "hung_outcomes": "; ".join(f"{k}: {n}" for k, n in sorted((run.get("hung") or {}).items())),
                "hung_ended_s": "; ".join(f"{k}: {s:g}" for k, s in sorted((run.get("hung_ended_s") or {}).items())),
                "rest_lost": round(1 - good / baseline, 4) if baseline and good is not None else None,
            }
        )
    return rows


def hang_table(results: list[dict]) -> pd.DataFrame:
    rows = [row for result in results for row in hang_rows(result)]
    return pd.DataFrame(rows, columns=HANG_COLUMNS).sort_values(HANG_KEYS, kind="stable", ignore_index=True)
