"""Reload under load: a closed-loop client that keeps every request's outcome and
time, the reloads triggered at known moments, and what each reload cost.

wrk's totals cannot say which reload a failure belongs to, nor how long no answer
came at all, so the client here is serverbench's own: a thread per connection,
each sending the workload's request and reading the answer (Content-Length or
chunked), reconnecting after a close. A request's outcome is a field:

- ``ok``: the expected status; ``bad status``: another one (a 502 from a router
  whose application is restarting);
- ``dropped``: sent, and the connection closed or reset before an answer. On a
  *reused* keep-alive connection this is the race every server that closes idle
  connections has (a client may retry an idempotent request); on a fresh one, a
  request lost;
- ``refused``: no connection at all (the listening socket gone);
- ``timeout``: no answer within the client's timeout.

Each reload's window runs from its trigger to the next one (the last to the end
of the load); the window before the first reload is the control: what the same
client sees from the same server without a reload.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

from serverbench.cell.wire import parse_head

OK, BAD_STATUS, DROPPED, REFUSED, TIMEOUT = "ok", "bad status", "dropped", "refused", "timeout"
FAILURES = (BAD_STATUS, DROPPED, REFUSED, TIMEOUT)
RECONNECT_PAUSE_S = 0.005  # after a refused connection: the listener is gone, do not spin


@dataclass(frozen=True)
class Outcome:
    """One request: when it ended (monotonic s), how, on a reused connection or not, and when
    it was sent (a failure belongs to the window it was sent in: a timeout ends seconds later)."""

    t: float
    kind: str
    reused: bool = False
    sent: float | None = None
    body: bytes | None = None  # kept where the client was asked to (``keep_bodies``)

    @property
    def since(self) -> float:
        return self.t if self.sent is None else self.sent


class ClosedEarly(Exception):
    """The server closed or reset the connection before a whole answer."""


def _recv(sock: socket.socket, buffer: bytearray) -> None:
    try:
        chunk = sock.recv(65536)
    except (ConnectionResetError, ConnectionAbortedError):
        raise ClosedEarly from None
    if not chunk:
        raise ClosedEarly
    buffer += chunk


def read_answer(sock: socket.socket, buffer: bytearray) -> tuple[int, bool, bytes]:
    """Read one whole answer off ``sock`` (``buffer`` keeps what follows it): its status,
    whether the server said it will close, and its body (a chunked one with its framing)."""
    while b"\r\n\r\n" not in buffer:
        _recv(sock, buffer)
    end = buffer.index(b"\r\n\r\n") + 4
    _, status, _, headers = parse_head(bytes(buffer[:end]))
    del buffer[:end]
    fields = {name.lower(): value for name, value in headers}
    if "chunked" in fields.get("transfer-encoding", "").lower():
        while b"0\r\n\r\n" not in buffer:  # the apps' answers are small: the last chunk ends them
            _recv(sock, buffer)
        length = buffer.index(b"0\r\n\r\n") + 5
    else:
        length = int(fields.get("content-length", "0"))
        while len(buffer) < length:
            _recv(sock, buffer)
    body = bytes(buffer[:length])
    del buffer[:length]
    return status, "close" in fields.get("connection", "").lower(), body


@dataclass
class ClosedLoop:
    """``connections`` clients, each sending ``request`` and reading its answer until ``stop``."""

    host: str
    port: int
    request: bytes
    expected_status: int
    connections: int
    timeout: float = 2.0
    keep_bodies: bool = False
    # A connection per request: the client closes it after each answer, whatever the server
    # said (a server may keep a connection open although the request asked to close it).
    fresh: bool = False
    outcomes: list[Outcome] = field(default_factory=list)
    answered: int = 0  # correct answers so far (read while it runs: the recycle lens's samples)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> ClosedLoop:
        for _ in range(self.connections):
            thread = threading.Thread(target=self._client, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> list[Outcome]:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout + 1)
        with self._lock:
            return sorted(self.outcomes, key=lambda outcome: outcome.t)

    def _note(self, kind: str, sent: float, reused: bool = False, body: bytes | None = None) -> None:
        with self._lock:
            self.outcomes.append(Outcome(time.monotonic(), kind, reused, sent, body if self.keep_bodies else None))
            self.answered += kind == OK

    def _client(self) -> None:
        sock, reused, buffer = None, False, bytearray()
        while not self._stop.is_set():
            sent = time.monotonic()
            if sock is None:
                try:
                    sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except ConnectionRefusedError:
                    self._note(REFUSED, sent)
                    time.sleep(RECONNECT_PAUSE_S)
                    continue
                except OSError:
                    self._note(TIMEOUT, sent)
                    continue
                reused, buffer = False, bytearray()
            try:
                sock.sendall(self.request)
                status, closing, body = read_answer(sock, buffer)
            except (ClosedEarly, BrokenPipeError, ConnectionResetError):
                self._note(DROPPED, sent, reused)
                sock.close()
                sock = None
                continue
            except OSError:  # socket.timeout among them
                self._note(TIMEOUT, sent, reused)
                sock.close()
                sock = None
                continue
            self._note(OK if status == self.expected_status else BAD_STATUS, sent, reused, body)
            reused = True
            if closing or self.fresh:
                sock.close()
                sock = None
        if sock is not None:
            sock.close()


@dataclass(frozen=True)
class Window:
    """What the client saw between two moments: answers, failures by kind, the longest time
    without any correct answer (from the last one before the window)."""

    start: float
    end: float
    answered: int
    failed: dict[str, int]
    dropped_reused: int  # dropped on a reused keep-alive connection (a client may retry those)
    longest_gap_s: float | None

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    def as_dict(self, origin: float) -> dict:
        return {
            "from_s": round(self.start - origin, 4),
            "to_s": round(self.end - origin, 4),
            "answered": self.answered,
            "failed": self.failed_total,
            "failed_by_kind": self.failed,
            "dropped_reused": self.dropped_reused,
            "longest_gap_s": None if self.longest_gap_s is None else round(self.longest_gap_s, 4),
        }


def window(outcomes: list[Outcome], start: float, end: float) -> Window:
    """The requests sent in [start, end) and the correct answers that came in it (``outcomes``
    sorted by the time they ended)."""
    inside = [outcome for outcome in outcomes if start <= outcome.since < end and outcome.kind != OK]
    answers = [outcome.t for outcome in outcomes if start <= outcome.t < end and outcome.kind == OK]
    before = [outcome.t for outcome in outcomes if outcome.t < start and outcome.kind == OK]
    times = ([before[-1]] if before else [start]) + answers + [end]
    failed = {
        kind: sum(1 for o in inside if o.kind == kind and not (kind == DROPPED and o.reused)) for kind in FAILURES
    }
    return Window(
        start,
        end,
        len(answers),
        {kind: count for kind, count in failed.items() if count},
        sum(1 for o in inside if o.kind == DROPPED and o.reused),
        max(b - a for a, b in zip(times, times[1:], strict=False)) if len(times) > 1 else None,
    )
