"""What the overload lens offers to releases and bisect (``Lens.checks``), overload_checks.csv: a
row per (profile, server, check) in the ``lens.Layout.ROW`` layout, both read at the set listen
backlog (the profile's: the same for every release, where a server's own may change with it; its
own where only that was measured) by the first of the profile's clients:

- ``goodput_at_2x``: the goodput at the judged multiple of capacity (2×) as capacity's share, the
  mean over its repeats (the figures its verdicts judge); a release is judged on it against its
  baseline and the release before it (overload_verdicts.csv, kinds ``release`` and ``release
  step``), a difference within ±``judged.margin`` of capacity;
- ``recovery_s``: the seconds after the burst until the after-rate is met again; shown, not
  judged (one burst a client); a server that never recovered within the window is a row
  ``not_measured`` saying so.

A server with no such figures (not measured, no verdicts asked) is a row with its status and
reason, never a missing row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from serverbench.lenses.overload.words import NEVER_RECOVERED, Backlog, Phase
from serverbench.record.vocabulary import Status

GOODPUT_CHECK, RECOVERY_CHECK = "goodput_at_2x", "recovery_s"
CHECK_UNITS = {GOODPUT_CHECK: "of capacity", RECOVERY_CHECK: "s"}
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
NO_JUDGED = "the profile asks for no verdicts (judged: null)"
NO_BURST = "the profile asks for no burst"


def offered(result: dict) -> tuple[dict, str] | None:
    """The condition and client the checks are read at (the module's docstring), None: none measured."""
    measured = {c["backlog"]: c for c in result["conditions"] if c["status"] == Status.OK}
    condition = measured.get(Backlog.SET) or measured.get(Backlog.OWN)
    return (condition, result["settings"]["clients"][0]) if condition else None


def figures_of(condition: dict, client: str, multiple: float) -> list[float]:
    """The goodput of each of a client's stretches at ``multiple`` as the condition's capacity's share."""
    capacity = condition.get("capacity_rps")
    return [
        stretch["goodput_rps"] / capacity
        for stretch in condition["stretches"]
        if capacity
        and stretch["phase"] == Phase.STEADY
        and stretch["client"] == client
        and stretch["multiple"] == multiple
    ]


def offered_figures(result: dict) -> list[float]:
    """The figures the checks are read from (``figures_of`` where ``offered`` says)."""
    judged, found = result["settings"].get("judged"), offered(result)
    return figures_of(*found, judged["multiple"]) if judged and found else []


def _row(result: dict, check: str, **figures) -> dict:
    keys = {key: result[key] for key in ("profile", "server", "language")}
    return {**keys, "check": check, "unit": CHECK_UNITS[check], "ci_low": None, "ci_high": None, **figures}


def _recovery(result: dict) -> dict:
    found = offered(result)
    bursts = [s for s in found[0]["stretches"] if s["phase"] == Phase.BURST and s["client"] == found[1]]
    if not bursts:
        return _row(result, RECOVERY_CHECK, value=None, n=0, status=Status.NOT_MEASURED, reason=NO_BURST)
    back = bursts[0]["recovery_s"]
    if back is None:
        return _row(result, RECOVERY_CHECK, value=None, n=1, status=Status.NOT_MEASURED, reason=NEVER_RECOVERED)
    return _row(result, RECOVERY_CHECK, value=back, n=1, status=Status.OK, reason=None)


def check_rows(result: dict) -> list[dict]:
    """One server's two checks (the module's docstring)."""
    if offered(result) is None:
        status = result["status"] if result["status"] != Status.OK else Status.NOT_MEASURED
        why = result["reason"] or next((c["reason"] for c in result["conditions"] if c.get("reason")), None)
        return [_row(result, check, value=None, n=0, status=status, reason=why) for check in CHECK_UNITS]
    figures = offered_figures(result)
    goodput = (
        _row(
            result,
            GOODPUT_CHECK,
            value=round(float(np.mean(figures)), 4),
            n=len(figures),
            status=Status.OK,
            reason=None,
        )
        if figures
        else _row(result, GOODPUT_CHECK, value=None, n=0, status=Status.NOT_MEASURED, reason=NO_JUDGED)
    )
    return [goodput, _recovery(result)]


def check_table(results: list[dict]) -> pd.DataFrame:
    """overload_checks.csv from the servers' records."""
    return pd.DataFrame([row for result in results for row in check_rows(result)], columns=CHECK_COLUMNS)
