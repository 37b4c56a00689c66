"""Does the server speak HTTP? Protocol probes over raw sockets, on loopback,
each bounded in requests and time, each giving one Check: pass, warn or fail
(or info, for what is reported and not judged), with what was sent and what
came back. They expect the apps' paths: ``/`` (Hello World!), ``/big`` (100 KiB)
and ``POST /echo`` (the request body back); a server that serves only ``/`` (a
baseline: ``app`` False) gets the checks that need no more, and ``info`` for
the body checks it cannot take.

A warn is behaviour the RFCs allow but a client may trip on (a 16 KiB header
accepted, a chunked body refused with 411); a fail breaks RFC 9110/9112 or
the next client (an answer to a request without Host, a body sent to HEAD)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from serverbench.cell.wire import Answer, Wire, WireError, parse_head, request
from serverbench.lenses.http.record import CheckOutcome

HELLO = b"Hello World!"
EVIDENCE_BYTES = 300
# RFC 9110 5.6.7: IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
IMF_FIXDATE = "%a, %d %b %Y %H:%M:%S GMT"


@dataclass(frozen=True)
class Check:
    """One probe's finding."""

    check: str
    outcome: CheckOutcome  # written as its word (pass, warn, fail, info)
    note: str
    sent: str = ""
    received: str = ""
    group: str = ""  # a family of checks shown together (request framing)
    kind: str = ""  # its class within the group
    requirement: str = ""  # MUST | SHOULD | MAY: the RFC's word the check rests on
    # Request framing's facts, each a field (the note joins them for a reader):
    did: str = ""  # what the server did, in a few words
    reading: str = ""  # which length it handed the app, where it took a body
    words: str = ""  # the RFC's words the check rests on
    desynchronised: bool = False  # it read a different request than was sent
    met: bool | None = None  # the requirement met (serverbench.record.conformance.met); None: none


def shown(data: bytes | str) -> str:
    """Evidence as text, truncated."""
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    return text if len(text) <= EVIDENCE_BYTES else text[:EVIDENCE_BYTES] + f"… ({len(text)} bytes)"


# How long a probe waits before it takes silence as the server's answer (no answer, or
# no close): a hello answer on loopback comes in milliseconds, even on a CPU slowed by
# half, and each failing probe pays this wait; each probe that must wait longer says so.
SILENCE_S = 1.0


def get(path: str = "/", version: str = "HTTP/1.1", *extra) -> bytes:
    return request("GET", path, version, [("Host", "localhost"), *extra])


@dataclass
class Target:
    host: str
    port: int
    app: bool = True  # serves the apps' paths (/big, /echo, /lint), not only /
    # The first answer and when it came: the date probe, run last, compares its Date with a
    # later one, so the 2 s it needs pass while the other probes run.
    first: tuple[float, Answer] | None = None

    def wire(self, timeout: float | None = None) -> Wire:
        return Wire(self.host, self.port, timeout or SILENCE_S)

    def exchange(self, data: bytes, method: str = "GET") -> Answer:
        with self.wire() as wire:
            wire.send(data)
            return wire.read_answer(method)

    def answers_next_client(self) -> bool:
        try:
            return self.exchange(get()).body == HELLO
        except (OSError, WireError):
            return False


def keepalive_http11(target: Target) -> Check:
    sent = get()
    with target.wire() as wire:
        wire.send(sent)
        first = wire.read_answer()
        try:
            wire.send(sent)
            second = wire.read_answer()
        except (OSError, WireError) as exc:
            return Check(
                "keepalive_http11", CheckOutcome.FAIL, f"closed after one answer ({exc})", shown(sent), shown(first.raw)
            )
    ok = first.body == HELLO and second.body == HELLO
    note = "two answers on one connection" if ok else f"answers {first.status} and {second.status}, not the hello body"
    return Check(
        "keepalive_http11", CheckOutcome.PASS if ok else CheckOutcome.FAIL, note, shown(sent), shown(second.raw)
    )


def _answered_then_closed(target: Target, name: str, sent: bytes, kept_open: str) -> Check:
    with target.wire() as wire:
        wire.send(sent)
        answer = wire.read_answer()
        closed = wire.closed(SILENCE_S)
    note = "answered, then closed" if closed else f"kept the connection open {SILENCE_S:g} s {kept_open}"
    return Check(name, CheckOutcome.PASS if closed else CheckOutcome.FAIL, note, shown(sent), shown(answer.raw))


def http10_closes(target: Target) -> Check:
    sent = get("/", "HTTP/1.0")
    return _answered_then_closed(target, "http10_closes", sent, "without Connection: keep-alive")


def http10_keepalive(target: Target) -> Check:
    sent = get("/", "HTTP/1.0", ("Connection", "keep-alive"))
    with target.wire() as wire:
        wire.send(sent)
        answer = wire.read_answer()
        if answer.says_close():
            return Check(
                "http10_keepalive",
                CheckOutcome.PASS,
                "declined, and said so (Connection: close)",
                shown(sent),
                shown(answer.raw),
            )
        if wire.closed(0.3):
            return Check(
                "http10_keepalive", CheckOutcome.WARN, "closed without saying so", shown(sent), shown(answer.raw)
            )
        wire.send(sent)
        try:
            again = wire.read_answer()
        except (OSError, WireError) as exc:
            return Check(
                "http10_keepalive",
                CheckOutcome.WARN,
                f"second request not answered ({exc})",
                shown(sent),
                shown(answer.raw),
            )
    return Check("http10_keepalive", CheckOutcome.PASS, "kept alive", shown(sent), shown(again.raw))


def connection_close(target: Target) -> Check:
    sent = get("/", "HTTP/1.1", ("Connection", "close"))
    return _answered_then_closed(target, "connection_close", sent, "after Connection: close")


def pipelining(target: Target) -> Check:
    # Distinct bodies tell the order apart; a baseline's three equal answers show only the count.
    paths = ["/", "/big", "/"] if target.app else ["/", "/", "/"]
    sent = b"".join(get(path) for path in paths)
    expected = [len(HELLO), 100 * 1024, len(HELLO)] if target.app else [len(HELLO)] * 3
    got = []
    with target.wire(3.0) as wire:
        wire.send(sent)
        try:
            for _ in paths:
                got.append(len(wire.read_answer().body))
        except (OSError, WireError) as exc:
            return Check("pipelining", CheckOutcome.FAIL, f"{len(got)} of 3 answers ({exc})", shown(sent), str(got))
    ok = got == expected
    note = "three answers, in order" if ok else f"answers out of order or wrong: body sizes {got}, wanted {expected}"
    return Check("pipelining", CheckOutcome.PASS if ok else CheckOutcome.FAIL, note, shown(sent), str(got))


def head(target: Target) -> Check:
    got = target.exchange(get())
    sent = request("HEAD", "/", "HTTP/1.1", [("Host", "localhost")])
    with target.wire() as wire:
        wire.send(sent)
        answer = wire.read_answer("HEAD")
        # A body sent to HEAD arrives as bytes before the next answer.
        extra = b"" if wire.closed(0.3) else wire.buffer
    if extra:
        return Check(
            "head",
            CheckOutcome.FAIL,
            f"{len(extra)} body bytes after a HEAD answer",
            shown(sent),
            shown(answer.raw + extra),
        )
    same = answer.header("Content-Type") == got.header("Content-Type")
    length = answer.header("Content-Length")
    if not same or length not in (None, str(len(got.body))):
        return Check("head", CheckOutcome.FAIL, "headers differ from GET's", shown(sent), shown(answer.raw))
    return Check("head", CheckOutcome.PASS, "GET's headers, no body", shown(sent), shown(answer.raw))


def date(target: Target) -> Check:
    started, first = target.first or (time.monotonic(), target.exchange(get()))
    value = first.header("Date")
    if value is None:
        return Check("date", CheckOutcome.FAIL, "no Date header", shown(get()), shown(first.raw))
    try:
        time.strptime(value, IMF_FIXDATE)
    except ValueError:
        return Check(
            "date", CheckOutcome.FAIL, f"Date not in IMF-fixdate form: {value!r}", shown(get()), shown(first.raw)
        )
    time.sleep(max(0.0, started + 2.1 - time.monotonic()))
    later = target.exchange(get()).header("Date") or ""
    try:
        advanced = parsedate_to_datetime(later) > parsedate_to_datetime(value)
    except (TypeError, ValueError):
        advanced = False
    note = f"{value} then {later}"
    return Check(
        "date", CheckOutcome.PASS if advanced else CheckOutcome.FAIL, note if advanced else f"did not advance: {note}"
    )


def content_length(target: Target) -> Check:
    """The bytes before the close, counted against the Content-Length the head declared."""
    for path in ("/", "/big") if target.app else ("/",):
        sent = get(path, "HTTP/1.1", ("Connection", "close"))
        with target.wire() as wire:
            wire.send(sent)
            raw = wire.read_to_close(SILENCE_S)
        head, _, body = raw.partition(b"\r\n\r\n")
        _, _, _, headers = parse_head(head + b"\r\n\r\n")
        length = dict((k.lower(), v) for k, v in headers).get("content-length")
        if length is not None and int(length) != len(body):
            note = f"{path}: Content-Length {length}, body {len(body)} bytes"
            return Check("content_length", CheckOutcome.FAIL, note, shown(sent), shown(raw))
        if length is None and "transfer-encoding" not in dict((k.lower(), v) for k, v in headers):
            return Check(
                "content_length",
                CheckOutcome.WARN,
                f"{path}: neither Content-Length nor chunked",
                shown(sent),
                shown(raw),
            )
    return Check("content_length", CheckOutcome.PASS, "Content-Length equals the body's bytes")


def server_header(target: Target) -> Check:
    value = target.exchange(get()).header("Server")
    return Check("server_header", CheckOutcome.INFO, value if value is not None else "no Server header")


def no_echo(name: str) -> Check:
    return Check(name, CheckOutcome.INFO, "not probed: the server answers only / (no /echo)")


def chunked_body(target: Target) -> Check:
    if not target.app:
        return no_echo("chunked_body")
    body = b"ping-" * 40
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i : i + 64]), body[i : i + 64]) for i in range(0, len(body), 64))
    sent = (
        request("POST", "/echo", "HTTP/1.1", [("Host", "localhost"), ("Transfer-Encoding", "chunked")])
        + chunks
        + b"0\r\n\r\n"
    )
    try:
        answer = target.exchange(sent)
    except (OSError, WireError) as exc:
        return Check("chunked_body", CheckOutcome.FAIL, f"no answer ({exc})", shown(sent))
    if answer.status == 411:
        return Check(
            "chunked_body",
            CheckOutcome.WARN,
            "refused a chunked body (411 Length Required)",
            shown(sent),
            shown(answer.raw),
        )
    ok = answer.status == 200 and answer.body == body
    note = "the body came back whole" if ok else f"status {answer.status}, {len(answer.body)} of {len(body)} bytes back"
    return Check("chunked_body", CheckOutcome.PASS if ok else CheckOutcome.FAIL, note, shown(sent), shown(answer.raw))


def expect_continue(target: Target) -> Check:
    if not target.app:
        return no_echo("expect_continue")
    body = b"x" * 1000
    head_bytes = request(
        "POST",
        "/echo",
        "HTTP/1.1",
        [("Host", "localhost"), ("Content-Length", str(len(body))), ("Expect", "100-continue")],
    )
    with target.wire() as wire:
        wire.send(head_bytes)
        interim = wire.read_interim(1.0)
        wire.send(body)
        try:
            answer = wire.read_answer()
        except (OSError, WireError) as exc:
            return Check("expect_continue", CheckOutcome.FAIL, f"no final answer ({exc})", shown(head_bytes))
    if answer.status == 417:
        return Check(
            "expect_continue", CheckOutcome.WARN, "417 Expectation Failed", shown(head_bytes), shown(answer.raw)
        )
    if answer.status != 200 or answer.body != body:
        return Check(
            "expect_continue",
            CheckOutcome.FAIL,
            f"status {answer.status}, body not echoed",
            shown(head_bytes),
            shown(answer.raw),
        )
    if interim is None or interim.status != 100:
        return Check(
            "expect_continue",
            CheckOutcome.WARN,
            "no 100 Continue within 1 s (the body was sent anyway)",
            shown(head_bytes),
            shown(answer.raw),
        )
    return Check(
        "expect_continue",
        CheckOutcome.PASS,
        "100 Continue, then the echo",
        shown(head_bytes),
        shown(interim.raw + answer.raw),
    )


def _refused(target: Target, name: str, sent: bytes, accepted: str = CheckOutcome.FAIL) -> Check:
    """Bad input: a 4xx answer or a close passes; the next client must still be answered."""
    try:
        with target.wire() as wire:
            wire.send(sent)
            try:
                answer = wire.read_answer()
            except WireError as exc:
                answer, why = None, str(exc)
    except OSError as exc:
        answer, why = None, f"connection error: {exc}"
    if not target.answers_next_client():
        return Check(
            name,
            CheckOutcome.FAIL,
            "the next client was not answered",
            shown(sent),
            shown(answer.raw) if answer else why,
        )
    if answer is None:
        return Check(name, CheckOutcome.PASS, f"closed ({why})", shown(sent))
    if 400 <= answer.status < 500:
        return Check(name, CheckOutcome.PASS, f"refused with {answer.status}", shown(sent), shown(answer.raw))
    return Check(name, accepted, f"answered {answer.status}", shown(sent), shown(answer.raw))


def bad_request_line(target: Target) -> Check:
    return _refused(target, "bad_request_line", b"GARBAGE / NOT-HTTP\r\n\r\n")


def big_header(target: Target) -> Check:
    # Accepting 16 KiB is allowed (RFC 9110 sets no limit): a warn, not a fail.
    return _refused(target, "big_header", get("/", "HTTP/1.1", ("X-Big", "a" * 16384)), accepted=CheckOutcome.WARN)


def missing_host(target: Target) -> Check:
    return _refused(target, "missing_host", request("GET", "/", "HTTP/1.1"))


def length_and_chunked(target: Target) -> Check:
    # RFC 9112 6.3: a server may process this as chunked but must then close; request smuggling otherwise.
    sent = (
        request(
            "POST",
            "/echo",
            "HTTP/1.1",
            [("Host", "localhost"), ("Content-Length", "4"), ("Transfer-Encoding", "chunked")],
        )
        + b"0\r\n\r\n"
    )
    return _refused(target, "length_and_chunked", sent, accepted=CheckOutcome.WARN)


SLOW_BYTES = 30  # at 100 ms a byte: 3 s, then the slow client gives up
NEW_CLIENTS = 14  # at most, one after another while the slow one dribbles
HELD_UP = 1.0  # seconds a new client may wait before it counts as held up


def _answered_after(target: Target) -> float | None:
    """Seconds a new client waited for its answer; None when none came within 6 s."""
    started = time.monotonic()
    try:
        with target.wire(6.0) as wire:
            wire.send(get())
            wire.read_answer(timeout=6.0)
    except (OSError, WireError):
        return None
    return time.monotonic() - started


def _new_clients(target: Target, until: float) -> list[float | None]:
    """New clients, each on its own connection, 100 ms apart, until one is held up
    or gets no answer, ``NEW_CLIENTS`` have been answered, or ``until`` has come; at
    least one, even when a stall of the machine let ``until`` pass already (no attempt
    would pass the check on nothing)."""
    waits: list[float | None] = []
    while len(waits) < NEW_CLIENTS and (not waits or time.monotonic() < until):
        waits.append(_answered_after(target))
        if waits[-1] is None or waits[-1] >= HELD_UP:
            break
        time.sleep(0.1)
    return waits


def slow_client(target: Target) -> Check:
    """One header byte every 100 ms for 3 s on one connection, and meanwhile new
    clients: pass when none waited a second, warn when one was held up (answered
    only later), fail when one got no answer within 6 s.

    Several new clients, not one: a server whose workers each accept connections
    (gunicorn's gthread worker) may hand a new client to the worker the slow one
    holds, or to another; one client would be a coin toss that flips the check
    from run to run. The last one starts early enough that, held up, it would wait
    more than ``HELD_UP`` for the slow client to give up."""
    sent = get("/", "HTTP/1.1", ("X-Slow", "s" * 30))[:SLOW_BYTES]
    stop = threading.Event()

    def dribble():
        try:
            with target.wire(5.0) as wire:
                for byte in sent:
                    if stop.wait(0.1):
                        return
                    wire.send(bytes([byte]))
        except OSError:
            return

    dribbling_until = time.monotonic() + 0.1 * len(sent)
    slow = threading.Thread(target=dribble, daemon=True)
    slow.start()
    time.sleep(0.3)
    waits = _new_clients(target, until=dribbling_until - HELD_UP - 0.3)
    stop.set()
    slow.join(5.0)
    if None in waits:
        return Check("slow_client", CheckOutcome.FAIL, f"new client {len(waits)} got no answer within 6 s")
    longest = max(waits, default=0.0)
    if longest < HELD_UP:
        note = f"{len(waits)} new clients while the slow one dribbled: the longest waited {longest:.3f} s"
        return Check("slow_client", CheckOutcome.PASS, note, received=f"{longest:.3f}")
    note = f"new client {len(waits)} waited {longest:.3f} s: held up by the slow one"
    return Check("slow_client", CheckOutcome.WARN, note, received=f"{longest:.3f}")


PROBES = [
    keepalive_http11,
    http10_closes,
    http10_keepalive,
    connection_close,
    pipelining,
    head,
    content_length,
    server_header,
    chunked_body,
    expect_continue,
    bad_request_line,
    big_header,
    missing_host,
    length_and_chunked,
    slow_client,
    date,
]


def probe(host: str, port: int, app: bool = True) -> list[Check]:
    """Every probe against one server; a probe that breaks is its own failed check."""
    target = Target(host, port, app)
    try:
        target.first = (time.monotonic(), target.exchange(get()))
    except (OSError, WireError):
        pass  # the date probe asks again, and fails as a check of its own
    checks = []
    for run in PROBES:
        try:
            checks.append(run(target))
        except (OSError, WireError) as exc:
            checks.append(Check(run.__name__, CheckOutcome.FAIL, f"probe broke: {exc}"))
    return checks
