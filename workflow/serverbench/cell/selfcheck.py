"""Self-checks: figures that must agree with each other if the measurement
is sound. Each is kept in the result (``checks``, ``steady``) and judged by a
flag against a threshold from the config's ``flags``.

- Little's law: in a closed loop every connection has one request in flight,
  so connections ≈ req/s × mean latency. Far less means requests the tool
  never counted (connections left waiting); far more, a tool anomaly (wrk's
  mean is corrected for coordinated omission and runs high: for wrk only a
  shortfall counts).
- Connections: as many established as the tool was asked to open.
- Steady state: the throughput of each second of the run, from the client
  sockets' byte counts read during it (where they are read); a run whose
  seconds vary too much never settled, or its warm-up was too short.
"""

from __future__ import annotations

import statistics

from serverbench.record.sections import Checks, ConnectionsCheck, Fairness, LittlesLaw, LoadResult, Steady

STEADY_BIN_S = 1.0


def self_checks(load: LoadResult, fairness: Fairness | None, concurrency: int, closed_loop: bool) -> Checks:
    littles_law = connections = None
    if closed_loop and load.requests_per_s and load.latency_ms.mean is not None:
        implied = load.requests_per_s * load.latency_ms.mean / 1000
        littles_law = LittlesLaw(
            connections=concurrency,
            implied_in_flight=round(implied, 3),
            ratio=round(implied / concurrency, 4),
            # wrk corrects its latency histogram for coordinated omission (it adds synthetic
            # samples to slow answers), so its mean overstates W: only a shortfall means anything.
            mean_latency_corrected_by_tool=(load.source or "").startswith("wrk"),
        )
    established = (fairness.extra.get("connections_established_max") if fairness else None) or None
    if established is not None:
        connections = ConnectionsCheck(asked=concurrency, established_max=established)
    return Checks(littles_law=littles_law, connections=connections)


def idle_timeout(load: LoadResult, keepalive_timeout_s: float | None, workers: int, concurrency: int) -> dict | None:
    """Where a server's worker waits on an idle kept-alive connection until it times out, a run
    of a number of requests (ab -n -k) with more connections than workers ends only as idle
    connections time out: about (c - W) / (2W) × the timeout, whatever the server's speed
    (Starman, 1 s: 1,000 connections on 5 workers take ~100 s). The prediction beside the
    run's duration is the evidence (flag ``idle_timeout_bound``)."""
    if not keepalive_timeout_s or concurrency <= workers or not load.duration_s:
        return None
    predicted = (concurrency - workers) / (2 * workers) * keepalive_timeout_s
    return {
        "keepalive_timeout_s": keepalive_timeout_s,
        "workers": workers,
        "connections": concurrency,
        "predicted_s": round(predicted, 3),
        "measured_s": round(load.duration_s, 3),
        "measured_over_predicted": round(load.duration_s / predicted, 3),
    }


def steady_state(snapshots: list[tuple[float, dict[str, int]]], load: LoadResult) -> Steady | None:
    """Requests/s in each whole second of the run, from the bytes all client sockets received."""
    if len(snapshots) < 3 or not load.requests or not load.transfer_bytes:
        return None
    bytes_per_answer = load.transfer_bytes / load.requests
    start, per_second, mark, bytes_at_mark = snapshots[0][0], [], snapshots[0][0], sum(snapshots[0][1].values())
    for taken, sockets in snapshots[1:]:
        received = sum(sockets.values())
        if taken - mark >= STEADY_BIN_S and received >= bytes_at_mark:
            per_second.append(round((received - bytes_at_mark) / bytes_per_answer / (taken - mark), 1))
            mark, bytes_at_mark = taken, received
    if len(per_second) < 2:
        return Steady(status="too short", series_rps=per_second, bin_s=STEADY_BIN_S)
    mean = statistics.fmean(per_second)
    cv = statistics.stdev(per_second) / mean if mean else None
    return Steady(status="ok", bin_s=STEADY_BIN_S, from_s=round(start, 3), series_rps=per_second, cv=cv)
