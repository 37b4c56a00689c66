"""A request that hangs (issue 95's item 5): at ``multiple`` of a server's capacity, one request in
``1 / share`` goes to the apps' ``/hang`` (asleep ``hang_s``, longer than every timeout) and the
rest to the profile's workload. At the server's own request timeout (the catalogue's
``request_timeout``: gunicorn's 30 s, uWSGI's none) and at ``timeout_s`` set, each hung request is
counted by what its client got and when (answered, reset, timed out at the client's own limit),
whether the server freed its worker (it ended the request before the client gave up), and the
rest's goodput against a run of the same rest without hangs just before it.

The hung requests are sent by this module's own client, one connection each (oha says what failed
but not when); the rest by oha's rate mode, as the lens's other stretches."""

from __future__ import annotations

import copy
import shutil
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from serverbench.cell import servers
from serverbench.cell.session import ServerSession
from serverbench.lenses.overload.client import Offered, connections_for_rate, offer
from serverbench.lenses.overload.words import Client, Met
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.record.vocabulary import Status

ANSWERED = "answered"  # a whole status line came back (its status kept)
NOTHING_SETS_IT = "the server has no request timeout to set (catalogue request_timeout)"


@dataclass(frozen=True)
class HungRequest:
    """One request to the hanging path: what its client got (``ANSWERED``, words.Met's reset or
    timed out, refused), after how many seconds from its sending, and the status where answered."""

    outcome: str
    ended_s: float
    status: int | None = None

    @property
    def ended_by_server(self) -> bool:
        """The server ended it (an answer or a closed connection), not the client's limit."""
        return self.outcome in (ANSWERED, Met.RESET)


def send_hung(host: str, port: int, path: str, timeout_s: float) -> HungRequest:
    """One GET of ``path`` on a connection of its own, read until a status line, a close or
    ``timeout_s`` (the client's own limit, from the sending)."""
    started = time.monotonic()

    def since() -> float:
        return round(time.monotonic() - started, 3)

    try:
        with socket.create_connection((host, port), timeout=timeout_s) as conn:
            conn.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            received = b""
            while b"\r\n" not in received:
                conn.settimeout(max(timeout_s - (time.monotonic() - started), 0.001))
                chunk = conn.recv(4096)
                if not chunk:
                    return HungRequest(str(Met.RESET), since())
                received += chunk
            return HungRequest(ANSWERED, since(), int(received.split(b" ", 2)[1]))
    except TimeoutError:
        return HungRequest(str(Met.TIMED_OUT), since())
    except ConnectionRefusedError:
        return HungRequest(str(Met.REFUSED), since())
    except OSError:  # reset by the peer, a broken pipe
        return HungRequest(str(Met.RESET), since())


class HungSender:
    """Sends a hung request every ``1 / rate`` s for ``seconds`` in a thread, each on its own
    connection (at most ``connections`` at once); ``found`` once joined, in sending order."""

    def __init__(self, address: tuple[str, int], path: str, rate: float, seconds: float, timeout_s: float, connections):
        self.args, self.timeout_s = (*address, path), timeout_s
        self.count, self.every_s, self.connections = max(1, round(rate * seconds)), 1 / rate, connections
        self.found: list[HungRequest] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=self.connections) as pool:
            futures = []
            for index in range(self.count):
                # Due on a schedule from the start: a late send is not pushed later still.
                time.sleep(max(0.0, started + index * self.every_s - time.monotonic()))
                futures.append(pool.submit(send_hung, *self.args, self.timeout_s))
            self.found = [future.result() for future in futures]

    def __enter__(self) -> HungSender:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._thread.join()


def with_request_timeout(config: dict, server: str, seconds: float) -> dict | None:
    """The config with the server's own request timeout set to ``seconds`` (its argv added, or
    its templates' ``request_timeout_s``); None where nothing sets one (Starman, waitress)."""
    bound = server_entry(config, server).request_timeout
    if bound is None or not bound.settable:
        return None
    changed = copy.deepcopy(config)
    entry = changed["catalogue"][server]
    if bound.setting:
        words = [str(word).replace("{request_timeout_s}", f"{seconds:g}") for word in bound.setting]
        key = "backend" if entry.get("backend") else "command"
        entry[key] = [*entry[key], *words]
    if bound.in_templates:
        entry["template_vars"] = {**(entry.get("template_vars") or {}), "request_timeout_s": seconds}
    return changed


@dataclass(frozen=True)
class HangRun:
    """The server at one request timeout (``timeout``: ``default``, its own, or ``set``): the
    timeout in force (None: none), its hung requests and the rest's goodput with and without them."""

    timeout: str
    status: str
    reason: str | None = None
    timeout_s: float | None = None
    per_request: bool | None = None
    capacity_rps: float | None = None
    rate: float | None = None  # the whole offered rate, hung and rest
    seconds: float | None = None
    hung: dict = field(default_factory=dict)  # {outcome: requests}
    hung_ended_s: dict = field(default_factory=dict)  # {outcome: median seconds from its sending}
    freed: int | None = None  # hung requests the server ended before the client's limit
    rest_counts: dict = field(default_factory=dict)  # {words.Met: requests} with hangs
    rest_goodput_rps: float | None = None
    baseline_goodput_rps: float | None = None  # the same rest, no hangs, just before

    @property
    def rest_lost(self) -> float | None:
        """The rest's goodput lost to the hangs, as the baseline's share."""
        if not self.baseline_goodput_rps or self.rest_goodput_rps is None:
            return None
        return round(1 - self.rest_goodput_rps / self.baseline_goodput_rps, 4)


def summary(found: list[HungRequest]) -> tuple[dict, dict, int]:
    """The hung requests by outcome, each outcome's median seconds, how many the server ended."""
    by: dict[str, list[float]] = {}
    for request in found:
        label = f"{ANSWERED} {request.status}" if request.outcome == ANSWERED else request.outcome
        by.setdefault(label, []).append(request.ended_s)
    medians = {label: sorted(times)[len(times) // 2] for label, times in by.items()}
    return {label: len(times) for label, times in by.items()}, medians, sum(r.ended_by_server for r in found)


def hang_runs(config, profile, target, plan, capacity: float | None, log_path) -> tuple[HangRun, ...]:
    """The server at its own request timeout and at the set one, each started afresh (its hung
    workers are never handed on), a HangRun each; none where the lens found no capacity."""
    bound = server_entry(config, target.server).request_timeout
    if plan.hang is None or not capacity:
        return ()
    own = bound.default_s if bound else None
    runs = [one_run(config, profile, target, plan, capacity, log_path, "default", own)]
    changed = with_request_timeout(config, target.server, plan.hang.timeout_s)
    if changed is None:
        runs.append(HangRun("set", str(Status.NOT_MEASURED), NOTHING_SETS_IT, per_request=None))
    else:
        runs.append(one_run(changed, profile, target, plan, capacity, log_path, "set", plan.hang.timeout_s))
    return tuple(runs)


def one_run(config, profile, target, plan, capacity, log_path, timeout: str, timeout_s) -> HangRun:
    """Start the server, offer the rest alone, then the rest with the hung requests; always end it."""
    bound = server_entry(config, target.server).request_timeout
    shape = {"timeout": timeout, "timeout_s": timeout_s, "per_request": bound.per_request if bound else None}
    found: list[HangRun] = []
    session = ServerSession(config, target, profile, log_path, failures=(OSError, servers.ServerError))
    with session:
        launch = session.start()
        session.verify()
        found.append(offered_with_hangs(config, profile, launch, plan, capacity, log_path, shape))
    if found and session.ending.ok:
        return found[0]
    return HangRun(**shape, status=str(session.ending.status), reason=session.ending.reason)


def offered_with_hangs(config, profile, launch, plan, capacity, log_path, shape) -> HangRun:
    hang = plan.hang
    workloads = apps.workloads(config, profile.name)
    rest_url = f"http://{launch.host}:{launch.port}{workloads[profile.workloads[0]]['path']}"
    hung_path = f"{workloads['hang']['path']}?s={hang.hang_s:g}"
    rate = round(hang.multiple * capacity, 1)
    rest_rate, hung_rate = round(rate * (1 - hang.share), 1), rate * hang.share
    oha = shutil.which(str(config["load_tools"]["oha"]["command"][0])) or "oha"
    objective_s = plan.search.objective_p99_ms / 1000
    # Connections sized as the lens's stretches size them (measure.Load): the rate times the
    # longest a request may hold one, so the client, not the server, never bounds what is sent.
    longest_s = plan.connect_timeout_s + plan.timeout_s

    def rest() -> Offered:
        with Path(log_path).open("a") as log:
            client = Client(plan.clients[0])
            connections = connections_for_rate(rest_rate, longest_s)
            args = (rest_rate, hang.seconds, client, connections, plan.timeout_s, objective_s, log)
            return offer(oha, rest_url, *args, plan.connect_timeout_s, plan.client_shortfall)

    baseline = rest()
    address = (launch.host, launch.port)
    connections = connections_for_rate(hung_rate, longest_s)
    with HungSender(address, hung_path, hung_rate, hang.seconds, plan.timeout_s, connections) as sender:
        with_hangs = rest()
    hung, medians, freed = summary(sender.found)
    return HangRun(
        **shape,
        status=str(Status.OK),
        capacity_rps=capacity,
        rate=rate,
        seconds=hang.seconds,
        hung=hung,
        hung_ended_s=medians,
        freed=freed,
        rest_counts=with_hangs.counts,
        rest_goodput_rps=round(with_hangs.counts[Met.WITHIN] / hang.seconds, 2),
        baseline_goodput_rps=round(baseline.counts[Met.WITHIN] / hang.seconds, 2),
    )
