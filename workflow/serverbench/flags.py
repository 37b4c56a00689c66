"""Flags: reasons not to take a number at face value.

Each flag is a short name; ``FLAG_HELP`` says what it means. Thresholds come
from the config's ``flags`` section.
"""

from __future__ import annotations

FLAG_HELP = {
    "errors": "error rate above the configured threshold",
    "non_2xx": "some answers had a status other than 2xx/3xx",
    "keepalive_broken": "nearly every answer was a read error: the server closes connections the tool keeps",
    "timeouts": "requests timed out: connections starved or server overloaded",
    "client_bound": "the load tool used nearly all its CPUs: the figure may be the tool's limit",
    "server_idle": "the server used little CPU while throughput was low: it is waiting, not working",
    "unstable": "requests/s varied across repeats more than the configured coefficient of variation",
    "no_keepalive": "the server closes each connection: the tool reconnects for every request",
    "starved": "some connections got (almost) no answers while others were served: the figure hides waiting clients",
    "backlog_small": "more connections than the listen backlog (or net.core.somaxconn): connects may be refused",
}

CLIENT_BOUND_SHARE = 0.9  # of the client CPUs' capacity
KEEPALIVE_BROKEN_SHARE = 0.9  # read errors per request
SERVER_IDLE_SHARE = 0.25  # of the server CPUs' capacity
STARVED_SHARE = 0.1  # slowest connection's req/s against the mean


def cell_flags(record: dict, thresholds: dict) -> list[str]:
    """Flags of one measured run."""
    load = record.get("load")
    if not load or record.get("status") != "ok":
        return []
    flags = []
    requests = load["requests"] or 0
    errors = load["errors"]
    if load["error_rate"] is not None and load["error_rate"] > thresholds["error_rate"]:
        flags.append("errors")
    if errors["non_2xx"]:
        flags.append("non_2xx")
    if requests and errors["read"] >= KEEPALIVE_BROKEN_SHARE * requests:
        flags.append("keepalive_broken")
    if errors["timeout"]:
        flags.append("timeouts")
    client = record.get("client", {})
    cpus = len(record.get("isolation", {}).get("client_cpus") or [1])
    if client.get("cpu_percent") is not None and client["cpu_percent"] >= 100 * CLIENT_BOUND_SHARE * cpus:
        flags.append("client_bound")
    server = record.get("server", {}).get("usage") or {}
    share = server.get("cpu_percent_of_allotment")
    if share is not None and share < 100 * SERVER_IDLE_SHARE and "client_bound" not in flags:
        flags.append("server_idle")
    if (record.get("verify") or {}).get("keepalive") in ("closes-announced", "closes-silently"):
        flags.append("no_keepalive")
    fairness = record.get("fairness") or {}
    if fairness.get("min_over_mean") is not None and fairness["min_over_mean"] < STARVED_SHARE:
        flags.append("starved")
    limits = record.get("limits") or {}
    if limits.get("effective_backlog") is not None and record["cell"]["concurrency"] > limits["effective_backlog"]:
        flags.append("backlog_small")
    return flags
