"""Closed-loop clients that keep sending while a server stops, each request counted by what it
met (words.Met): a thread per connection, as cell.reloads' client, reading each answer whole
(``reloads.read_answer``), with what the stop needs besides: the client's port of each request
(the watcher tells by it whether the server had accepted the connection), whether the
connection was a reused one, and a moment after which no new request is sent (``until``: the
balancer has stopped routing) while those in flight are waited for."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

from serverbench.cell.reloads import RECONNECT_PAUSE_S, ClosedEarly, read_answer
from serverbench.lenses.shutdown.watch import Watcher
from serverbench.lenses.shutdown.words import Client, Met


@dataclass(frozen=True)
class Sent:
    """One request: sent and ended (monotonic s), what it met, by which client and which of its
    connections (a thread each), reused or not."""

    sent: float
    ended: float
    met: Met
    client: Client
    connection: int
    reused: bool = False


@dataclass
class Clients:
    """``connections`` clients of ``kind`` sending ``request`` until ``until`` (monotonic s;
    None: until ``join``), each at most ``count`` requests (None: no limit)."""

    host: str
    port: int
    request: bytes
    expected_status: int
    connections: int
    kind: Client
    watcher: Watcher
    timeout: float = 5.0
    until: float | None = None
    count: int | None = None
    sent: list[Sent] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # After a refused connection: the listener is gone, a closed loop does not spin.
    refused_pause_s: float = RECONNECT_PAUSE_S

    def start(self) -> Clients:
        for index in range(self.connections):
            thread = threading.Thread(target=self._client, args=(index,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def join(self) -> list[Sent]:
        """Wait for every request in flight (each ends within the client's timeout)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(2 * self.timeout + 1)
        with self._lock:
            return sorted(self.sent, key=lambda one: one.ended)

    def _sending(self) -> bool:
        return not self._stop.is_set() and (self.until is None or time.monotonic() < self.until)

    def _note(self, index: int, sent: float, met: Met, reused: bool = False) -> None:
        with self._lock:
            self.sent.append(Sent(sent, time.monotonic(), met, self.kind, index, reused))

    def _connect(self, index: int, sent: float) -> socket.socket | None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except ConnectionRefusedError:
            self._note(index, sent, Met.REFUSED)
            time.sleep(self.refused_pause_s)
            return None
        except OSError:  # no answer to its SYN within the timeout (a full accept queue)
            self._note(index, sent, Met.TIMED_OUT)
            return None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _client(self, index: int) -> None:
        sock, reused, made = None, False, 0
        while self._sending() and (self.count is None or made < self.count):
            made += 1
            sent = time.monotonic()
            if sock is None:
                sock, reused = self._connect(index, sent), False
                if sock is None:
                    continue
            met, closing = self.one_request(sock, reused)
            self._note(index, sent, met, reused)
            if closing or met is not Met.ANSWERED or self.kind is Client.FRESH:
                sock.close()
                sock = None
            else:
                reused = True
        if sock is not None:
            sock.close()

    def one_request(self, sock: socket.socket, reused: bool) -> tuple[Met, bool]:
        """Send the request on ``sock`` and read its answer: what it met, and whether the
        server said it will close the connection."""
        met, closing = exchange(sock, self.request, self.expected_status)
        return (cut(sock, reused, self.watcher) if met is None else met), closing


@dataclass
class OpenLoop(Clients):
    """Requests started on a schedule, ``rate`` a second from ``start``, each on a connection
    of its own, whatever the answers before it: ``connections`` sender threads take the next
    due request, so the pace holds while fewer than that many are in flight (a request a sender
    takes late keeps its due moment as its sent moment: its wait is the server's)."""

    rate: float = 1.0
    refused_pause_s: float = 0.0  # the schedule paces it
    # The longest a due request waited for a free sender (s): above the pace's own step, the
    # senders were all busy and the loop no longer open.
    lag_s: float = 0.0
    _next: int = 0
    _start: float = 0.0

    def start(self) -> OpenLoop:
        self._start = time.monotonic()
        return super().start()

    def _due(self) -> tuple[int, float] | None:
        """The next request's number and due moment, None once it falls after ``until`` or the join."""
        with self._lock:
            number, self._next = self._next, self._next + 1
        due = self._start + number / self.rate
        if self._stop.is_set() or (self.until is not None and due >= self.until):
            return None
        return number, due

    def _client(self, index: int) -> None:
        # Each request is its own connection, numbered by its place in the schedule: a refused
        # one is a request lost at the balancer's pace, not a sender retrying (table.lost_after).
        while (next_due := self._due()) is not None:
            number, due = next_due
            time.sleep(max(0.0, due - time.monotonic()))
            if self._stop.is_set():
                return
            self.lag_s = max(self.lag_s, time.monotonic() - due)
            sock = self._connect(number, due)
            if sock is None:
                continue
            met, _ = self.one_request(sock, False)
            self._note(number, due, met)
            sock.close()


def answered_rate(loads: list[Clients], since: float) -> float:
    """Answers a second the clients got from ``since`` to now (the closed loops' pace)."""
    elapsed = time.monotonic() - since
    answered = sum(one.met is Met.ANSWERED for load in loads for one in list(load.sent))
    return answered / elapsed if elapsed > 0 else 0.0


def exchange(sock: socket.socket, sent: bytes, expected_status: int) -> tuple[Met | None, bool]:
    """Send ``sent`` on ``sock`` and read one answer whole: what it met (None: the connection was
    closed or reset before a whole answer) and whether the server said it will close it."""
    try:
        sock.sendall(sent)
        status, closing, _ = read_answer(sock, bytearray())
    except (ClosedEarly, BrokenPipeError, ConnectionResetError):
        return None, True
    except OSError:  # socket.timeout among them
        return Met.TIMED_OUT, True
    return (Met.ANSWERED if status == expected_status else Met.BAD_STATUS), closing


def cut(sock: socket.socket, reused: bool, watcher: Watcher) -> Met:
    """A request whose connection closed or was reset before a whole answer: on a reused
    connection, closed under it; else cut in flight where the server had accepted it, or dropped
    from the accept queue where it never had."""
    if reused:
        return Met.KEEPALIVE_CLOSED
    try:
        port = sock.getsockname()[1]
    except OSError:
        return Met.RESET_IN_FLIGHT
    return Met.RESET_IN_FLIGHT if watcher.was_accepted(port) else Met.RESET_IN_QUEUE
