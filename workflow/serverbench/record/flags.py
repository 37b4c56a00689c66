"""Flags: reasons not to take a number at face value. Every flag is made here.

Each flag is a short name; ``FLAG_HELP`` says what it means. A run's flags
(``cell_flags``) are judged on its record; a cell's (``summary_flags``: the
spread of its repeats) and two tools' disagreement (``tools_disagree``) on the
repeats' figures, when the tables are made. In a table, flags are one text,
``a;b;c`` (``joined``), read back by ``parsed``. Every threshold comes from
the config's ``flags`` section (validated by the schema) and is recorded in
each result beside the flags it produced.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from serverbench.record.model import CellRecord
from serverbench.record.sections import Checks, OpenLoop
from serverbench.record.vocabulary import Framing, Status

SEPARATOR = ";"
# A run the keep-alive timeout would stretch by under this many seconds is not judged by it.
IDLE_BOUND_MIN_S = 2.0

FLAG_HELP = {
    "errors": "error rate above flags.error_rate",
    "non_2xx": "some answers had a status other than 2xx/3xx",
    "keepalive_broken": "nearly every answer was a read error: the server closes connections the tool keeps",
    "timeouts": "requests timed out: connections starved or server overloaded",
    "stalled": "fewer answers than open connections in the whole run: the server stalled",
    "tool_exit": "the load tool exited with an error code although it printed a report",
    "client_bound": "the load tool used nearly all of its CPU allotment: the figure may be the tool's limit",
    "server_idle": (
        "the server used little of its CPUs: it waited (on the app, too few workers or the client) "
        "rather than worked, so the figure is not its capacity"
    ),
    "unstable": (
        "requests/s varied across all ok repeats more than flags.cv (information only: it decides nothing)"
        " (where the machine's CPUs change speed, see its steadiness under Answers, that may be the machine's)"
    ),
    "cpu_contended": (
        "other processes used the server's CPUs during the load (more than flags.foreign_cpu_share of them): "
        "the server did not have its CPUs to itself"
    ),
    "oom_killed": "the kernel killed a server process for memory during the cell: its figure includes the restart",
    "single_repeat": "one successful repeat: its spread, so its stability, is unknown",
    "no_keepalive": "the server closes each connection: the tool reconnects for every request",
    "close_delimited": (
        "the server ends each answer by closing the connection (no Content-Length, not chunked): no connection"
        " is reused, so every request pays a new connection; Plack::Middleware::ContentLength (Perl) or setting"
        " Content-Length fixes it (wrk also counts each such answer as a read error and opens a connection it never"
        " uses for it: its run is keepalive_broken too)"
    ),
    "starved": "some connections got (almost) no answers while others were served: the figure hides waiting clients",
    "no_traffic": "no connection received any answer while the sockets were read",
    "backlog_small": "more connections than the server's listen backlog: connects may be refused or delayed",
    "littles_law": "req/s × mean latency is far from the connections open: requests went uncounted (or the tool erred)",
    "connections_missing": "fewer connections were established than the tool was asked to open",
    "no_steady_state": "the throughput of the run's seconds varied more than flags.steady_cv: it never settled",
    "tools_disagree": "two load tools measured the same cell's req/s more than flags.tools_disagree_share apart",
    "rate_not_held": "the rate tool achieved less than flags.rate_held_share of the rate it offered: requests queued",
    "idle_timeout_bound": (
        "the run of a number of requests lasted about as long as the server's keep-alive timeout predicts"
        " for more connections than workers ((c - W) / (2W) × timeout): the figure measures that timeout,"
        " not the server's speed"
    ),
    "thin_tail": "fewer answers above p99.9 than open_loop.tail_samples asks: the p99.9 rests on few samples",
}


def cell_flags(record: CellRecord, thresholds: dict, ceiling: str | None = None) -> list[str]:
    """Flags of one measured run; `ceiling` names the run's ceiling server (comparisons.ceiling)."""
    if record.load is None or record.status != Status.OK:
        return []
    flags = _load_flags(record, thresholds) + _resource_flags(record, thresholds, record.cell.server == ceiling)
    if record.verify is not None and record.verify.keepalive in ("closes-announced", "closes-silently"):
        flags.append("no_keepalive")
    if record.verify is not None and record.verify.framing == Framing.CLOSE_DELIMITED:
        flags.append("close_delimited")
    flags += _fairness_flags(record, thresholds) + _self_check_flags(record, thresholds)
    flags += open_loop_flags(record.open_loop, thresholds)
    backlog = record.limits.effective_backlog if record.limits else None
    if backlog is not None and record.cell.concurrency > backlog:
        flags.append("backlog_small")
    return flags


def _load_flags(record: CellRecord, thresholds: dict) -> list[str]:
    load, flags = record.load, []
    requests = load.requests or 0
    if load.error_rate is not None and load.error_rate > thresholds["error_rate"]:
        flags.append("errors")
    if load.errors.non_2xx:
        flags.append("non_2xx")
    if requests and (load.errors.read or 0) >= thresholds["keepalive_broken_share"] * requests:
        flags.append("keepalive_broken")
    if load.errors.timeout:
        flags.append("timeouts")
    if requests < record.cell.concurrency:
        flags.append("stalled")
    if record.client.exit_code:
        flags.append("tool_exit")
    return flags


def _client_saturated(record: CellRecord, thresholds: dict) -> bool:
    """The load tool used nearly all of its allotment: its CPUs, or less where a quota caps it."""
    cpus = len(record.isolation.client_cpus or [1])
    if record.client.cpu_quota:
        cpus = min(cpus, record.client.cpu_quota)
    used = record.client.cpu_percent
    return used is not None and used >= 100 * thresholds["client_bound_share"] * cpus


def _resource_flags(record: CellRecord, thresholds: dict, ceiling: bool) -> list[str]:
    flags = []
    # The ceiling (nginx answering by itself) measures machine *and* load tool:
    # the tool's limit is what it is there to find, not a reason to distrust it.
    client_bound = _client_saturated(record, thresholds)
    if client_bound and not ceiling:
        flags.append("client_bound")
    foreign = record.server.usage.foreign_cpu_share
    if foreign is not None and foreign > thresholds["foreign_cpu_share"]:
        flags.append("cpu_contended")
    if record.server.oom_kills:
        flags.append("oom_killed")
    share = record.server.usage.cpu_percent_of_allotment
    if share is not None and share < 100 * thresholds["server_idle_share"] and not client_bound:
        flags.append("server_idle")
    return flags


def _fairness_flags(record: CellRecord, thresholds: dict) -> list[str]:
    fairness = record.fairness
    if fairness is None:
        return []
    if fairness.status == "no traffic":
        return ["no_traffic"]
    low = fairness.min_over_mean
    # h2load reports no count of starved connections, only the slowest one's share.
    starved = fairness.starved_connections is None or fairness.starved_connections > 0
    if low is not None and low < thresholds["starved_share"] and starved:
        return ["starved"]
    return []


def _self_check_flags(record: CellRecord, thresholds: dict) -> list[str]:
    checks, flags = record.checks or Checks(), []
    little = checks.littles_law
    if little:
        # A saturated client holds every connection between an answer and its next request
        # (wrk writes it on a later turn of its event loop): time outside the server that no
        # latency counts. The shortfall is then the client's own, not requests gone uncounted.
        short = little.ratio < 1 - thresholds["little_tolerance"] and not _client_saturated(record, thresholds)
        over = little.ratio > 1 + thresholds["little_tolerance"] and not little.mean_latency_corrected_by_tool
        if short or over:
            flags.append("littles_law")
    bound = checks.extra.get("idle_timeout")
    if bound and bound["predicted_s"] >= IDLE_BOUND_MIN_S and 0.5 <= bound["measured_over_predicted"] <= 2:
        flags.append("idle_timeout_bound")
    connections = checks.connections
    if connections and connections.established_max < connections.asked:
        flags.append("connections_missing")
    cv = record.steady.cv if record.steady else None
    if cv is not None and cv > thresholds["steady_cv"]:
        flags.append("no_steady_state")
    return flags


def open_loop_flags(section: OpenLoop | None, thresholds: dict) -> list[str]:
    """``rate_not_held`` and ``thin_tail`` of a rate cell's record."""
    if section is None or section.achieved_share is None:
        return []
    flags = []
    if section.achieved_share < thresholds.get("rate_held_share", 0.95):
        flags.append("rate_not_held")
    if section.above_p99_9 < section.tail_samples_wanted:
        flags.append("thin_tail")
    return flags


def summary_flags(repeat_flags: Iterable, spread: float | None, repeats_ok: int, thresholds: dict) -> str:
    """A cell's flags: every flag of its ok repeats, ``unstable`` where the spread of its
    req/s (a coefficient of variation) is above ``flags.cv``, ``single_repeat`` with one."""
    flags = set().union(*(parsed(entry) for entry in repeat_flags))
    if spread is not None and spread > thresholds["cv"]:
        flags.add("unstable")
    if repeats_ok == 1:
        flags.add("single_repeat")
    return joined(sorted(flags))


def tools_disagree(medians: Iterable[float], share: float) -> bool:
    """Two closed-loop tools measured the same cell's median req/s more than ``share`` apart."""
    medians = list(medians)
    return len(medians) > 1 and max(medians) > (1 + share) * min(medians)


def parsed(value) -> frozenset[str]:
    """The flags of a table cell ("a;b;c"); none where it is empty or missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return frozenset()
    return frozenset(flag for flag in str(value).split(SEPARATOR) if flag)


def joined(flags: Iterable[str]) -> str:
    """Flags as a table cell, in the order given."""
    return SEPARATOR.join(flags)


def with_flag(value, flag: str) -> str:
    """A table cell's flags with one more."""
    return joined(sorted(parsed(value) | {flag}))
