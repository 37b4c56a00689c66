"""Request framing: what a server does with a malformed or ambiguous request.

A server behind a proxy that reads a request's length differently from the
proxy can be made to answer a request hidden in another's body (request
smuggling). RFC 9112 and RFC 9110 say what a server MUST, SHOULD or MAY do
with such input; each case here is one raw request with the section it rests
on and those words.

Each case is sent on a fresh connection, followed on the same connection by a
marker request (``GET /``, answered "Hello World!"), and judged by what came
back on the wire: *rejected* (the status, and whether the server then closed),
*answered*, *closed silently*, or *desynchronised*: an answer to a request
hidden in the body (``GET /big`` inside it, answered with 100 KiB, or one
answer too many), an answer to body bytes read as a request, or no answer to
the marker on a connection left open (the marker was taken as body). Where the
server answered a request with a body, the app's ``/echo`` shows which body it
was handed, so the note says which length the server used."""

from __future__ import annotations

from dataclasses import dataclass, field

from serverbench.cell.wire import Answer, WireError, request
from serverbench.lenses.http.probes import HELLO, Check, Target, shown
from serverbench.lenses.http.record import CheckOutcome
from serverbench.record.conformance import met

GROUP = "request framing"
HIDDEN = b"GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n"
MARKER = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
BIG_BYTES = 100 * 1024
QUIET_S = 1.0  # no byte for this long on an open connection: nothing more is coming

# The RFCs' words, by the requirement each case rests on.
CL_INVALID = (
    "RFC 9112 6.3: If a message is received without Transfer-Encoding and with an invalid Content-Length header "
    "field, then the message framing is invalid and the recipient MUST treat it as an unrecoverable error ... the "
    "server MUST respond with a 400 (Bad Request) status code and then close the connection"
)
CL_LIST = (
    "RFC 9112 6.3: ... the recipient MUST treat it as an unrecoverable error, unless the field value can be "
    "successfully parsed as a comma-separated list, all values in "
    "the list are valid, and all values in the list are the same (in which case, the message is processed with "
    "that single value used as the Content-Length field value)"
)
TE_NOT_FINAL = (
    "RFC 9112 6.3: If a Transfer-Encoding header field is present in a request and the chunked transfer coding is "
    "not the final encoding, the message body length cannot be determined reliably; the server MUST respond with "
    "the 400 (Bad Request) status code and then close the connection"
)
TE_UNKNOWN = TE_NOT_FINAL + (
    ". RFC 9112 6.1: A server that receives a request message with a transfer coding it does not understand "
    "SHOULD respond with 501 (Not Implemented)"
)
TE_HTTP10 = (
    "RFC 9112 6.1: A server or client that receives an HTTP/1.0 message containing a Transfer-Encoding header "
    "field MUST treat the message as if the framing is faulty, even if a Content-Length is present, and close the "
    "connection after processing the message"
)
TE_AND_CL = (
    "RFC 9112 6.1: A server MAY reject a request that contains both Content-Length and Transfer-Encoding or "
    "process such a request in accordance with the Transfer-Encoding alone. Regardless, the server MUST close the "
    "connection after responding to such a request to avoid the potential attacks"
)
GRAMMAR = (
    "RFC 9112 2.2: When a server ... receives a sequence of octets that does not match the HTTP-message grammar "
    "aside from the robustness exceptions listed above, the server SHOULD respond with a 400 (Bad Request) "
    "response and close the connection"
)
CHUNKED_TWICE = "RFC 9112 6.1: A sender MUST NOT apply the chunked transfer coding more than once to a message body. "
CHUNK_SIZE = "RFC 9112 7.1: chunk-size = 1*HEXDIG ... chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF. "
CHUNK_OVERFLOW = (
    "RFC 9112 7.1: Recipients MUST anticipate potentially large hexadecimal numerals and prevent parsing errors "
    "due to integer conversion overflows or precision loss due to integer representation"
)
WHITESPACE_COLON = (
    "RFC 9112 5.1: A server MUST reject, with a response status code of 400 (Bad Request), any received request "
    "message that contains whitespace between a header field name and colon"
)
OBS_FOLD = (
    "RFC 9112 5.2: A server that receives an obs-fold in a request message ... MUST either reject the message by "
    "sending a 400 (Bad Request) ... or replace each received obs-fold with one or more SP octets prior to "
    "interpreting the field value"
)
BARE_CR = (
    "RFC 9112 2.2: A recipient of such a bare CR MUST consider that element to be invalid or replace each bare CR "
    "with SP before processing the element or forwarding the message"
)
NUL = (
    "RFC 9110 5.5: a recipient of CR, LF, or NUL within a field value MUST either reject the message or replace "
    "each of those characters with SP before further processing or forwarding of that message"
)
HOST = (
    "RFC 9112 3.2: A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message that "
    "lacks a Host header field and to any request message that contains more than one Host header field line or a "
    "Host header field with an invalid field value"
)
BARE_LF = (
    "RFC 9112 2.2: Although the line terminator for the start-line and fields is the sequence CRLF, a recipient "
    "MAY recognize a single LF as a line terminator and ignore any preceding CR"
)

# What a server must do, and how each behaviour is judged against it:
#   reject        MUST answer 400 (501 allowed where the words say so); with ``close``, then close
#   should        SHOULD reject: accepting is a warning
#   either        MUST reject or repair: accepting is the repair the RFC allows (info)
#   may           MAY accept: accepting is info, rejecting passes
#   close         MUST close the connection after answering, whatever the answer
#   no-overflow   MUST NOT take a size modulo 2^64: accepting it as the small size fails
REQUIREMENT_LEVEL = {
    "reject": "MUST",
    "should": "SHOULD",
    "either": "MUST",
    "may": "MAY",
    "close": "MUST",
    "no-overflow": "MUST",
}


@dataclass(frozen=True)
class Case:
    """One malformed or ambiguous request, what the RFC requires of a server, and the
    bodies the app would be handed under each way of reading its length."""

    name: str
    kind: str  # content-length | transfer-encoding | field syntax | chunk framing | host | line ends
    requires: str  # a key of REQUIREMENT_LEVEL
    words: str
    data: bytes
    readings: dict[str, bytes] = field(default_factory=dict)
    close: bool = False  # the words require closing after the answer

    @property
    def has_body(self) -> bool:
        """Sent to the app's POST /echo, whose answer shows the body the server handed on."""
        return self.data.startswith(b"POST /echo")


def _post(headers: list[tuple[str, str]], body: bytes, version: str = "HTTP/1.1") -> bytes:
    return request("POST", "/echo", version, [("Host", "localhost"), *headers]) + body


def _get(*headers: tuple[str, str]) -> bytes:
    return request("GET", "/", "HTTP/1.1", [("Host", "localhost"), *headers])


PING = b"ping\n"
CHUNKED = b"5\r\nping\n\r\n0\r\n\r\n"
LONG = str(len(PING + HIDDEN))


def content_length_cases() -> list[Case]:
    both = {"the first Content-Length (5)": PING, f"the last Content-Length ({LONG})": PING + HIDDEN}
    as_five = {"Content-Length 5": PING}
    return [
        Case(
            "cl_duplicate_differ",
            "content-length",
            "reject",
            CL_INVALID,
            _post([("Content-Length", "5"), ("Content-Length", LONG)], PING + HIDDEN),
            both,
            close=True,
        ),
        Case(
            "cl_list_differ",
            "content-length",
            "reject",
            CL_INVALID,
            _post([("Content-Length", f"5, {LONG}")], PING + HIDDEN),
            {"the list's first value (5)": PING, f"the list's last value ({LONG})": PING + HIDDEN},
            close=True,
        ),
        Case(
            "cl_list_same",
            "content-length",
            "may",
            CL_LIST,
            _post([("Content-Length", "5, 5")], PING),
            {"the list's single value (5)": PING},
        ),
        Case(
            "cl_plus_sign",
            "content-length",
            "reject",
            CL_INVALID,
            _post([("Content-Length", "+5")], PING),
            as_five,
            close=True,
        ),
        Case(
            "cl_negative", "content-length", "reject", CL_INVALID, _post([("Content-Length", "-1")], PING), close=True
        ),
        Case(
            "cl_non_digit",
            "content-length",
            "reject",
            CL_INVALID,
            _post([("Content-Length", "5x")], PING),
            as_five,
            close=True,
        ),
    ]


def transfer_encoding_cases() -> list[Case]:
    chunked_or_length = {"chunked": PING, "Content-Length 4": CHUNKED[:4]}
    return [
        Case(
            "te_chunked_not_last",
            "transfer-encoding",
            "reject",
            TE_NOT_FINAL,
            _post([("Transfer-Encoding", "chunked, identity")], CHUNKED),
            {"chunked": PING},
            close=True,
        ),
        Case(
            "te_unknown",
            "transfer-encoding",
            "reject",
            TE_UNKNOWN,
            _post([("Transfer-Encoding", "serverbench-unknown")], CHUNKED),
            {"chunked": PING},
            close=True,
        ),
        Case(
            "te_chunked_twice",
            "transfer-encoding",
            "should",
            CHUNKED_TWICE + GRAMMAR,
            _post([("Transfer-Encoding", "chunked, chunked")], CHUNKED),
            {"chunked, decoded once": PING},
        ),
        Case(
            "te_http10",
            "transfer-encoding",
            "close",
            TE_HTTP10,
            _post(
                [("Connection", "keep-alive"), ("Transfer-Encoding", "chunked"), ("Content-Length", str(len(CHUNKED)))],
                CHUNKED,
                "HTTP/1.0",
            ),
            {"chunked": PING, f"Content-Length {len(CHUNKED)}": CHUNKED},
        ),
        Case(
            "te_and_cl_kept_open",
            "transfer-encoding",
            "close",
            TE_AND_CL,
            _post([("Content-Length", "4"), ("Transfer-Encoding", "chunked")], CHUNKED),
            chunked_or_length,
        ),
    ]


def field_syntax_cases() -> list[Case]:
    return [
        Case(
            "whitespace_before_colon",
            "field syntax",
            "reject",
            WHITESPACE_COLON,
            _post([("Content-Length ", "5")], PING),
            {"Content-Length 5": PING},
        ),
        Case("obs_fold", "field syntax", "either", OBS_FOLD, _get(("X-Probe", "a\r\n b"))),
        Case("bare_cr", "field syntax", "either", BARE_CR, _get(("X-Probe", "a\rb"))),
        Case("nul_in_value", "field syntax", "either", NUL, _get(("X-Probe", "a\x00b"))),
        Case("field_name_not_token", "field syntax", "should", GRAMMAR, _get(("X(Probe)", "1"))),
    ]


def chunk_cases() -> list[Case]:
    def chunked(body: bytes) -> bytes:
        return _post([("Transfer-Encoding", "chunked")], body)

    return [
        Case(
            "chunk_size_prefix",
            "chunk framing",
            "should",
            CHUNK_SIZE + GRAMMAR,
            chunked(b"0x5\r\nping\n\r\n0\r\n\r\n"),
            {"size 0x5 read as 5": PING},
        ),
        # 2^64 + 5: read modulo 2^64, it is a chunk of 5 bytes.
        Case(
            "chunk_size_overflow",
            "chunk framing",
            "no-overflow",
            CHUNK_OVERFLOW,
            chunked(b"10000000000000005\r\nping\n\r\n0\r\n\r\n"),
            {"the size modulo 2^64 (5)": PING},
        ),
        Case(
            "chunk_data_longer",
            "chunk framing",
            "should",
            CHUNK_SIZE + GRAMMAR,
            chunked(b"5\r\nping\nEXTRA\r\n0\r\n\r\n"),
            {"its size (5), the rest dropped": PING, "the data up to the CRLF": b"ping\nEXTRA"},
        ),
        Case(
            "chunk_missing_crlf",
            "chunk framing",
            "should",
            CHUNK_SIZE + GRAMMAR,
            chunked(b"5\r\nping\n0\r\n\r\n"),
            {"its size (5)": PING},
        ),
    ]


def other_cases() -> list[Case]:
    bare_lf = b"GET / HTTP/1.1\nHost: localhost\n\n"
    return [
        Case("host_duplicate", "host", "reject", HOST, _get(("Host", "localhost"))),
        Case("host_invalid", "host", "reject", HOST, request("GET", "/", "HTTP/1.1", [("Host", "local host")])),
        Case("bare_lf", "line ends", "may", BARE_LF, bare_lf),
    ]


CASES = [*content_length_cases(), *transfer_encoding_cases(), *field_syntax_cases(), *chunk_cases(), *other_cases()]
KINDS = list(dict.fromkeys(case.kind for case in CASES))


@dataclass
class Seen:
    """What came back on the connection: the answers, and how it ended."""

    answers: list[Answer]
    ending: str  # closed | open | garbled: ...

    @property
    def first(self) -> Answer | None:
        return self.answers[0] if self.answers else None


def send_with_marker(target: Target, data: bytes) -> Seen:
    """``data`` and the marker on one connection; every answer until the server closes, goes
    quiet, or has answered the marker (a hello answer after the first). A server without the
    apps' paths answers hello to everything, so it gets a moment more for a third answer."""
    with target.wire(QUIET_S) as wire:
        try:
            wire.send(data + MARKER)
        except OSError:
            return Seen([], "closed")
        answers, ending = wire.read_answers(QUIET_S, most=4, done=_marker_answered)
        if ending == "done" and not target.app:
            more, ending = wire.read_answers(0.3, most=2)
            answers += more
    return Seen(answers, "open" if ending == "done" else ending)


def _marker_answered(answers: list[Answer]) -> bool:
    return len(answers) >= 2 and answers[-1].body == HELLO


def desynchronised(seen: Seen, app: bool) -> str | None:
    """Why the answers show the server read a different request than was sent, or None."""
    answers = seen.answers
    if app and seen.first is not None and MARKER in seen.first.body:
        return "the marker sent after it was handed to the app as body"
    hidden = [answer for answer in answers if len(answer.body) >= BIG_BYTES]
    if app and hidden:
        return "answered GET /big, a request hidden in the body"
    if len(answers) > 2:
        return f"{len(answers)} answers to 2 requests: a request hidden in the body was answered"
    if seen.first is not None and seen.first.status < 400 and len(answers) < 2 and seen.ending == "open":
        return "the marker sent after it was never answered: it was read as body"
    later = answers[1:]
    if app and any(answer.body != HELLO for answer in later):
        statuses = ", ".join(str(answer.status) for answer in later)
        return f"answered {statuses} after the first answer: body bytes were read as a request"
    if seen.first is None and seen.ending == "open":
        return "no answer at all on an open connection: the server is still reading what it took for a body"
    return None


def behaviour(seen: Seen) -> str:
    """What the server did, in a few words."""
    first = seen.first
    if first is None:
        return "closed without an answer" if seen.ending == "closed" else f"no answer ({seen.ending})"
    after = {"closed": "then closed", "open": "kept the connection open"}.get(seen.ending, seen.ending)
    if len(seen.answers) >= 2:
        after = "answered the marker too" + (", then closed" if seen.ending == "closed" else "")
    word = "rejected with" if first.status >= 400 else "answered"
    return f"{word} {first.status}, {after}"


def reading(case: Case, seen: Seen, app: bool) -> str:
    """Which length the server used, from the body /echo handed back."""
    first = seen.first
    if not case.has_body or first is None or first.status >= 400 or not app:
        return ""
    for name, body in case.readings.items():
        if first.body == body:
            return f"; it used {name} ({len(body)} bytes to the app)"
    if not first.body:
        return "; it handed the app no body (it read no length)"
    return f"; it handed the app {len(first.body)} bytes matching no reading: {first.body[:60]!r}"


def judge(case: Case, seen: Seen, app: bool) -> tuple[str, str]:
    """The outcome and the note's first words for what the server did under ``case.requires``."""
    outcome, did, _ = judged(case, seen, app)
    return outcome, did


def judged(case: Case, seen: Seen, app: bool) -> tuple[str, str, bool]:
    """``judge``, and whether the server was desynchronised (a field, not read back from words)."""
    did, desync = behaviour(seen), desynchronised(seen, app)
    if case.requires == "no-overflow" and seen.first is None:
        # Waiting for the 2^64 + 5 bytes announced (the marker taken as chunk data) reads the size right.
        return CheckOutcome.PASS, did + ": no answer while it waits for the size announced, or closed", False
    if desync:
        return CheckOutcome.FAIL, f"desynchronised: {desync} ({did})", True
    outcome, did = _judge_in_sync(case, seen, did)
    return outcome, did, False


def _judge_in_sync(case: Case, seen: Seen, did: str) -> tuple[str, str]:
    """The outcome of a server that read the request that was sent."""
    first = seen.first
    accepted = first is not None and first.status < 400
    closed = seen.ending == "closed" and len(seen.answers) <= 1
    if case.requires == "close":
        return (CheckOutcome.PASS if closed else CheckOutcome.FAIL), did + (
            "" if closed else ": the RFC requires closing after answering"
        )
    if case.requires == "no-overflow":
        took_small = accepted and first.body == PING
        return (CheckOutcome.FAIL if took_small else CheckOutcome.PASS), did + (
            ": read the size modulo 2^64" if took_small else ""
        )
    if accepted:
        outcome = {
            "reject": CheckOutcome.FAIL,
            "should": CheckOutcome.WARN,
            "either": CheckOutcome.INFO,
            "may": CheckOutcome.INFO,
        }[case.requires]
        why = {CheckOutcome.FAIL: ": the RFC requires a 400", CheckOutcome.INFO: ": the RFC allows taking it"}.get(
            outcome, ""
        )
        if case.requires == "either":
            why = ": the RFC allows repairing it (each offending octet replaced by SP), which an answer cannot show"
        return outcome, did + why
    if first is None:
        # Closing without a word is safe; where a 400 is a MUST it was owed first.
        if case.requires == "reject":
            return CheckOutcome.WARN, did + ": safe, but the RFC requires a 400 first"
        return CheckOutcome.PASS, did
    if case.requires == "reject" and case.close and not closed:
        return CheckOutcome.FAIL, did + ": the RFC requires closing after the 400"
    return CheckOutcome.PASS, did


def check(case: Case, target: Target) -> Check:
    """One case against the server: sent with the marker, judged, with the RFC's words."""
    level = REQUIREMENT_LEVEL[case.requires]
    try:
        seen = send_with_marker(target, case.data)
    except (OSError, WireError) as exc:
        seen = Seen([], f"garbled: {exc}")
    outcome, did, desync = judged(case, seen, target.app)
    if not target.answers_next_client():
        outcome, did = CheckOutcome.FAIL, f"{did}; afterwards a new client was not answered"
    received = b"".join(answer.raw[:200] for answer in seen.answers) or seen.ending.encode()
    used = reading(case, seen, target.app)
    return Check(
        case.name,
        outcome,
        f"{did}{used}. {case.words}",
        shown(case.data + MARKER),
        shown(received),
        group=GROUP,
        kind=case.kind,
        requirement=level,
        did=did,
        reading=used.removeprefix("; "),
        words=case.words,
        desynchronised=desync,
        met=met(outcome),
    )


def check_all(target: Target) -> list[Check]:
    """Every case, in order; the server must still answer a new client after each."""
    return [check(case, target) for case in CASES]
