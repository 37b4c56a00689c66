"""Flags: reasons not to take a number at face value.

Each flag is a short name; ``FLAG_HELP`` says what it means. Thresholds come
from the config's ``flags`` section.
"""

from __future__ import annotations

from serverbench.model import CellRecord

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


def cell_flags(record: CellRecord, thresholds: dict) -> list[str]:
    """Flags of one measured run."""
    load = record.load
    if load is None or record.status != "ok":
        return []
    flags = []
    requests = load.requests or 0
    errors = load.errors
    if load.error_rate is not None and load.error_rate > thresholds["error_rate"]:
        flags.append("errors")
    if errors.non_2xx:
        flags.append("non_2xx")
    if requests and errors.read >= KEEPALIVE_BROKEN_SHARE * requests:
        flags.append("keepalive_broken")
    if errors.timeout:
        flags.append("timeouts")
    # The client's allotment: its CPUs, or less where a CPU quota caps it.
    cpus = len(record.isolation.get("client_cpus") or [1])
    if record.client.cpu_quota:
        cpus = min(cpus, record.client.cpu_quota)
    if record.client.cpu_percent is not None and record.client.cpu_percent >= 100 * CLIENT_BOUND_SHARE * cpus:
        flags.append("client_bound")
    share = record.server.usage.cpu_percent_of_allotment
    if share is not None and share < 100 * SERVER_IDLE_SHARE and "client_bound" not in flags:
        flags.append("server_idle")
    if record.verify is not None and record.verify.keepalive in ("closes-announced", "closes-silently"):
        flags.append("no_keepalive")
    if record.fairness is not None and record.fairness.min_over_mean is not None:
        if record.fairness.min_over_mean < STARVED_SHARE:
            flags.append("starved")
    backlog = record.limits.effective_backlog if record.limits else None
    if backlog is not None and record.cell.concurrency > backlog:
        flags.append("backlog_small")
    return flags
