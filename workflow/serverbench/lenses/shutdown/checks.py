"""What the shutdown lens offers to releases and bisect (``Lens.checks``), shutdown_checks.csv:
a row per (profile, server, check) in the ``lens.Layout.ROW`` layout, both read from the graceful
stop with no delay, bare and alone (the signal with no balancer still routing, no front, no
second instance: the stop a release changes, not the deployment around it):

- ``lost_per_stop``: the requests it lost, the mean over its stops (the figure its verdicts
  judge); a release is judged on it against its baseline and the release before it
  (shutdown_verdicts.csv, kinds ``release`` and ``release step``: ``decide.release_comparisons``);
- ``stop_s``: the seconds from the signal to the server's exit, the median over its stops;
  shown, not judged: a graceful stop's length is mostly the server's own waits (gunicorn's
  arbiter wakes once a second, a graceful timeout caps it), steps no margin in seconds tells a
  release's change from, and a stop that does not end is already lost requests or a kill.

A server with no such stop (no graceful one declared, no delay 0 in its profile, or none that
could be made) is a row with its status and reason, never a missing row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from serverbench.lenses.shutdown.table import alone, lost_after
from serverbench.lenses.shutdown.words import NO_GRACEFUL, NOT_DECLARED, How
from serverbench.record.vocabulary import Status

LOST_CHECK, STOP_CHECK = "lost_per_stop", "stop_s"
CHECK_UNITS = {LOST_CHECK: "requests per stop", STOP_CHECK: "s"}
CHECK_COLUMNS = [
    "profile",
    "server",
    "language",
    "check",
    "value",
    "unit",
    "ci_low",
    "ci_high",
    "n",
    "status",
    "reason",
]
NO_DELAY = 0.0
NO_DELAY_ASKED = "the profile's delays have no 0: no graceful stop without a delay"


def offered_stops(result: dict) -> list[dict]:
    """The record's graceful stops with no delay that were made, bare with nothing taking over."""
    return [
        stop
        for stop in result["stops"]
        if stop["how"] == How.GRACEFUL and stop["delay_s"] == NO_DELAY and stop["status"] == Status.OK and alone(stop)
    ]


def _row(result: dict, check: str, unit: str, **figures) -> dict:
    keys = {key: result[key] for key in ("profile", "server", "language")}
    return {**keys, "check": check, "unit": unit, "ci_low": None, "ci_high": None, **figures}


def _not_offered(result: dict) -> tuple[str, str]:
    """Why a record has no graceful stop with no delay that was made: its status and reason."""
    if result["status"] != Status.OK:
        return result["status"], result["reason"]
    graceful = [stop for stop in result["stops"] if stop["how"] == How.GRACEFUL and alone(stop)]
    if not graceful:
        return Status.NOT_MEASURED, NO_GRACEFUL if result["stops"] else result["reason"] or NOT_DECLARED
    unmade = [stop for stop in graceful if stop["delay_s"] == NO_DELAY]
    if not unmade:
        return Status.NOT_MEASURED, NO_DELAY_ASKED
    return unmade[0]["status"], unmade[0]["reason"]


def check_rows(result: dict) -> list[dict]:
    """One server's two checks, from its graceful stops with no delay."""
    stops = offered_stops(result)
    if not stops:
        status, why = _not_offered(result)
        return [_row(result, check, unit, status=status, reason=why, n=0) for check, unit in CHECK_UNITS.items()]
    lost = [len(lost_after(stop)) for stop in stops]
    exited = [stop["exited_s"] for stop in stops if stop["exited_s"] is not None]
    return [
        _row(
            result,
            LOST_CHECK,
            CHECK_UNITS[LOST_CHECK],
            value=round(float(np.mean(lost)), 4),
            n=len(lost),
            status=Status.OK,
            reason=None,
        ),
        _row(
            result,
            STOP_CHECK,
            CHECK_UNITS[STOP_CHECK],
            value=float(np.median(exited)) if exited else None,
            n=len(exited),
            status=Status.OK if exited else Status.NOT_MEASURED,
            reason=None if exited else "no exit seen within the lens's wait",
        ),
    ]


def check_table(results: list[dict]) -> pd.DataFrame:
    """shutdown_checks.csv from the servers' records."""
    return pd.DataFrame([row for result in results for row in check_rows(result)], columns=CHECK_COLUMNS)
