"""A balancer's idle pool as a client kind (issue 96, item 2): connections opened, one request
answered on each, held idle, then reused after an idle time; each reuse counted by what it met
(``Reuse``). Swept across and around a server's keep-alive timeout, the counts give its race
window (idle times where reuses fail: a reset or a 502 at the balancer, conbench#1156) and the
largest balancer idle timeout that is safe against it (``safe_idle_timeout``).

The cost side (``fresh_client_beside``): idle pooled connections held, as many as the server's
workers or threads, and what a fresh client gets meanwhile: answered (and its wait) or starved
(gunicorn#1296: the balancer's idle connections hold every sync worker). A held connection is
either answered once (a pooled one) or pre-opened with no request (Starman#102, ELB's).

A connection's idle time runs from the end of its first answer to the moment its reuse is sent,
as a balancer's idle timer runs.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from serverbench.cell.reloads import ClosedEarly, read_answer


class Reuse(StrEnum):
    """What one reuse of a pooled idle connection met (docs/front.md)."""

    ANSWERED = "answered"  # a whole answer with the expected status
    # The server's FIN was already there when the balancer came to send: it sees the connection
    # closed, drops it and sends on a new one (nginx, HAProxy do): no request lost.
    CLOSED_BEFORE_SEND = "closed cleanly before the send"
    RESET_BEFORE_SEND = "reset before the send"  # a reset already there: dropped and retried alike
    # Sent, then reset: the server closed it as the request came (its idle timer fired with the
    # request unread); the balancer answers 502 or, for a non-idempotent request, cannot retry.
    RESET = "reset"
    CLOSED_BEFORE_ANSWER = "closed before the answer"  # sent, then a FIN and no answer: a 502 too
    TIMED_OUT = "timed out"  # no answer within the client's timeout
    BAD_STATUS = "bad status"  # a whole answer with another status
    # The first answer said `Connection: close` (gunicorn's sync worker always does): no balancer
    # pools it, so there is no reuse to lose.
    NOT_KEPT = "not kept"


# Reuses the balancer cannot retry on its own: the race's failures, in the tables' order.
FAILED = (Reuse.RESET, Reuse.CLOSED_BEFORE_ANSWER, Reuse.TIMED_OUT, Reuse.BAD_STATUS)
# Seen closed before the send: the balancer retries on a new connection (a new connection's cost).
RETRIED = (Reuse.CLOSED_BEFORE_SEND, Reuse.RESET_BEFORE_SEND)


@dataclass(frozen=True)
class Pool:
    """The balancer's side: where it sends, what, and how long it waits for an answer."""

    host: str
    port: int
    request: bytes
    expected_status: int = 200
    timeout_s: float = 5.0

    def connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def exchange(self, sock: socket.socket) -> tuple[Reuse, bool]:
        """Send the request and read one answer whole: what it met, and whether the server said
        it will close the connection."""
        noting = _NotingResets(sock)
        try:
            sock.sendall(self.request)
            status, closing, _ = read_answer(noting, bytearray())  # type: ignore[arg-type]
        except (ConnectionResetError, BrokenPipeError):
            return Reuse.RESET, True
        except ClosedEarly:
            return (Reuse.RESET if noting.reset else Reuse.CLOSED_BEFORE_ANSWER), True
        except OSError:  # socket.timeout among them
            return Reuse.TIMED_OUT, True
        return (Reuse.ANSWERED if status == self.expected_status else Reuse.BAD_STATUS), closing


class _NotingResets:
    """A socket's recv for ``reloads.read_answer``, which tells a reset from a FIN to no one
    (both are its ClosedEarly): this notes which it was."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.reset = sock, False

    def recv(self, size: int) -> bytes:
        try:
            return self.sock.recv(size)
        except ConnectionResetError:
            self.reset = True
            raise


def closed_before_send(sock: socket.socket) -> Reuse | None:
    """What the balancer sees on an idle connection before it sends: the server's FIN or reset
    already there, or nothing (None: the connection looks open)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return None
    try:
        peeked = sock.recv(1, socket.MSG_PEEK)
    except ConnectionResetError:
        return Reuse.RESET_BEFORE_SEND
    return Reuse.CLOSED_BEFORE_SEND if peeked == b"" else None  # bytes unasked for: sent on anyway


def reuse_after(pool: Pool, idle_s: float, connections: int) -> Counter[Reuse]:
    """Open ``connections`` connections, one answered request on each, then reuse each once
    ``idle_s`` after its first answer ended: what each reuse met."""
    met: Counter[Reuse] = Counter()
    held: list[tuple[socket.socket, float]] = []
    try:
        for _ in range(connections):
            sock = pool.connect()
            first, closing = pool.exchange(sock)
            if first is not Reuse.ANSWERED or closing:
                met[Reuse.NOT_KEPT if first is Reuse.ANSWERED else first] += 1
                sock.close()
                continue
            held.append((sock, time.monotonic()))
        for sock, answered_at in held:
            time.sleep(max(0.0, answered_at + idle_s - time.monotonic()))
            met[closed_before_send(sock) or pool.exchange(sock)[0]] += 1
    finally:
        for sock, _ in held:
            sock.close()
    return met


def idle_times(keepalive_s: float, factors: Iterable[float] = (0.25, 0.5, 0.9, 1.1, 1.5, 2.0)) -> list[float]:
    """Idle times swept across and around a keep-alive timeout."""
    return [round(keepalive_s * factor, 3) for factor in factors]


def failed(counts: Mapping[Reuse, int]) -> int:
    return sum(counts.get(outcome, 0) for outcome in FAILED)


def race_window(swept: Mapping[float, Mapping[Reuse, int]]) -> list[float]:
    """The idle times at which some reuse failed (none retried away), in order."""
    return sorted(idle for idle, counts in swept.items() if failed(counts))


def safe_idle_timeout(swept: Mapping[float, Mapping[Reuse, int]]) -> float | None:
    """The largest swept idle time up to which no reuse failed: a balancer whose idle timeout is
    at most this one never sends on a connection the server is closing (None: not even the
    shortest is safe; a pool of connections never kept is safe at every idle time)."""
    safe = None
    for idle in sorted(swept):
        if failed(swept[idle]):
            break
        safe = idle
    return safe


class Fresh(StrEnum):
    """What a fresh client got while the pool held its connections idle."""

    ANSWERED = "answered"
    STARVED = "starved"  # no answer within its wait: every worker or thread held by an idle one


@dataclass(frozen=True)
class FreshClient:
    got: Fresh
    wait_s: float  # from its connect to its answer's end (its whole wait where starved)


def hold_idle(pool: Pool, held: int, pre_opened: bool) -> list[socket.socket]:
    """``held`` idle connections, each answered once (a pooled one) or pre-opened with no request
    (``pre_opened``: what an ELB does). Each is accepted by the server before the next opens:
    a pooled one by its answer, a pre-opened one by a request-less connect the server may not
    have accepted yet (the caller waits for that where it matters)."""
    socks = []
    for _ in range(held):
        sock = pool.connect()
        socks.append(sock)
        if not pre_opened:
            pool.exchange(sock)
    return socks


def fresh_client_beside(pool: Pool, held: int, wait_s: float, pre_opened: bool = False) -> FreshClient:
    """Hold ``held`` idle connections, then send one request on a fresh connection: answered
    within ``wait_s`` or starved. The held ones are closed after."""
    socks = hold_idle(pool, held, pre_opened)
    try:
        started = time.monotonic()
        fresh = Pool(pool.host, pool.port, pool.request, pool.expected_status, wait_s)
        try:
            with contextlib.closing(fresh.connect()) as sock:
                met, _ = fresh.exchange(sock)
        except OSError:  # not even connected within its wait: the accept queue full
            met = Reuse.TIMED_OUT
        got = Fresh.ANSWERED if met is Reuse.ANSWERED else Fresh.STARVED
        return FreshClient(got, round(time.monotonic() - started, 4))
    finally:
        for sock in socks:
            sock.close()
