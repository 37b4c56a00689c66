"""Checks a server's answer before it is measured.

Two requests go over one connection so that the keep-alive behaviour is known
before the load tool meets it: ``keeps`` (the second request is answered on
the same connection), ``closes-announced`` (the server said Connection: close,
spoke HTTP/1.0 without keep-alive, or ended the answer by closing) or
``closes-silently`` (it closed with no notice: wrk then counts every answer as a
read error).

Its framing (``vocabulary.Framing``) says how the answer's end is known: its
Content-Length, chunked encoding, or, with neither, the close of the connection
(``close-delimited``: valid, measured, flagged for the connection each request
then pays). An answer with neither on a connection the server keeps open
(``undelimited``) has no end a client can see but the server's idle timeout:
a wrong answer.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import re
import socket
import time
from html.parser import HTMLParser

from serverbench.record.model import Verification
from serverbench.record.vocabulary import Framing

DATE_SKEW_S = 60  # a Date further than this from the harness's clock is not the answer's time


def undelimited(why: str) -> str:
    """The problem of an answer with neither Content-Length nor chunked encoding whose server kept
    the connection open (``why``: how that was seen). Such an answer ends where the connection
    closes (RFC 9112 6.3), so it has no end a client can see but the server's idle timeout."""
    return (
        "neither Content-Length nor chunked encoding, yet the server kept the connection open after the answer"
        f" ({why}), so a client sees the answer end only when the server's idle timeout closes the connection;"
        " Plack::Middleware::ContentLength (Perl) or setting Content-Length fixes it"
    )


def body_problems(body: bytes, expect: dict) -> list[str]:
    """How a body differs from the expected one: exact bytes, a substring, a JSON object's keys,
    a regular expression, or length and SHA-256 for big bodies."""
    problems = []
    if "body" in expect and body != expect["body"].encode():
        problems.append(_first_difference(body, expect["body"].encode()))
    if "contains" in expect and expect["contains"].encode() not in body:
        problems.append(f"body {body[:80]!r} does not contain {expect['contains']!r}")
    if "json_keys" in expect or "json_items" in expect:
        problems.extend(_json_problems(body, expect.get("json_keys", []), expect.get("json_items")))
    if "html" in expect:
        problems.extend(_html_problems(body, expect["html"]))
    if "matches" in expect and not re.search(expect["matches"].encode(), body):
        problems.append(f"body {body[:80]!r} does not match {expect['matches']!r}")
    if "length" in expect and len(body) != expect["length"]:
        problems.append(f"body of {len(body)} bytes, expected {expect['length']}")
    if "body_sha256" in expect and hashlib.sha256(body).hexdigest() != expect["body_sha256"]:
        problems.append(f"body SHA-256 {hashlib.sha256(body).hexdigest()}, expected {expect['body_sha256']}")
    return problems


def _first_difference(body: bytes, expected: bytes) -> str:
    """Where a body first differs from the expected bytes, with a few bytes either side."""
    pairs = enumerate(zip(body, expected, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(body), len(expected)))
    start = max(0, at - 20)
    return (
        f"body differs from byte {at} ({len(body)} bytes, expected {len(expected)}): "
        f"{body[start : at + 40]!r}, expected {expected[start : at + 40]!r}"
    )


def _json_problems(body: bytes, keys: list[str], items: int | None) -> list[str]:
    """A JSON object with ``keys``; or, where ``items`` is given, an array of that many such objects."""
    try:
        found = json.loads(body)
    except ValueError as exc:
        return [f"body {body[:80]!r} is not JSON: {exc}"]
    if items is not None:
        if not isinstance(found, list) or len(found) != items:
            shape = f"an array of {len(found)}" if isinstance(found, list) else f"a {type(found).__name__}"
            return [f"body is JSON {shape}, expected an array of {items} objects"]
        objects = found
    else:
        objects = [found]
    for position, item in enumerate(objects):
        where = f" (item {position})" if items is not None else ""
        if not isinstance(item, dict):
            return [f"body is JSON {type(item).__name__}{where}, expected an object with keys {keys}"]
        missing = [key for key in keys if key not in item]
        if missing:
            return [f"JSON object{where} without key(s) {missing} (has {sorted(item)[:10]})"]
    return []


class _Tokens(HTMLParser):
    """A page as tags and text: character references decoded (&quot; and &#34; alike), runs
    of whitespace as one space, whitespace between tags dropped, names lowercased. Two
    pages with the same tokens say the same thing, whatever their template engine's
    escaping and indentation (TechEmpower's verifier compares fortunes the same way)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tokens: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tokens.append(f"<{tag}{''.join(f' {k}={v!r}' for k, v in sorted(attrs))}>")

    def handle_endtag(self, tag):
        self.tokens.append(f"</{tag}>")

    def handle_data(self, data):
        text = " ".join(data.split())
        if text:
            self.tokens.append(text)

    def handle_decl(self, decl):
        self.tokens.append(f"<!{decl.lower()}>")


def html_tokens(text: str) -> list[str]:
    parser = _Tokens()
    parser.feed(text)
    parser.close()
    return parser.tokens


def _html_problems(body: bytes, expected: str) -> list[str]:
    try:
        found = html_tokens(body.decode())
    except UnicodeDecodeError as exc:
        return [f"body is not UTF-8: {exc}"]
    wanted = html_tokens(expected)
    for position, (got, want) in enumerate(zip(found, wanted, strict=False)):
        if got != want:
            return [f"HTML differs at token {position}: {got[:80]!r}, expected {want[:80]!r}"]
    if len(found) != len(wanted):
        return [f"HTML of {len(found)} tokens, expected {len(wanted)}"]
    return []


def header_problems(headers: dict[str, str], required: list[str], now: float | None = None) -> list[str]:
    """Each required header present (``headers`` keyed in lower case); a Date an HTTP date within
    DATE_SKEW_S of ``now`` (a Date fixed at start-up, or in the wrong format, fails)."""
    problems = [f"no {name} header" for name in required if name.lower() not in headers]
    if "date" in (name.lower() for name in required) and "date" in headers:
        try:
            sent = email.utils.parsedate_to_datetime(headers["date"]).timestamp()
        except (TypeError, ValueError):
            return [*problems, f"Date {headers['date']!r} is not an HTTP date"]
        if abs(sent - (now if now is not None else time.time())) > DATE_SKEW_S:
            problems.append(f"Date {headers['date']!r} is not the time of the answer")
    return problems


def verify(
    host: str, port: int, expect: dict, path: str = "/", timeout: float = 5.0, sent: dict | None = None
) -> Verification:
    """The answer to the workload's request (``sent``: its method, body and headers; GET by
    default), checked, its framing found, and asked again on the same connection to learn its keep-alive."""
    result = Verification()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn.auto_open = 0
    try:
        conn.connect()
        response = _send(conn, path, sent)
        _read_head(response, result)
        body = _read_body(response, result, timeout)
        kept_open = None  # how the server was seen to keep the connection open after an unframed answer
        if result.framing is None:
            kept_open = _kept_open(host, port, path, sent, timeout, len(body))
            result.framing = Framing.UNDELIMITED if kept_open else Framing.CLOSE_DELIMITED
    except (OSError, http.client.HTTPException) as exc:
        result.problems.append(f"request failed: {exc.__class__.__name__}: {exc}")
        body = None
    if body is None:
        conn.close()
        return result

    result.body_bytes = len(body)
    result.problems.extend(answer_problems(result, body, expect))
    result.rule_problems = header_problems(result.headers, expect.get("headers") or [])
    if kept_open:
        result.problems.append(undelimited(kept_open))
        # A client that reused the connection would read the next answer as part of this body.
        result.keepalive = "broken"
    else:
        result.keepalive = _keepalive(conn, response, body, path, sent, expect)
    conn.close()
    result.ok = not result.problems
    return result


def _send(conn: http.client.HTTPConnection, path: str, sent: dict | None) -> http.client.HTTPResponse:
    """One request: GET, or the workload's ``method``, ``body`` and ``headers`` (``sent``); the answer's head read."""
    sent = sent or {}
    headers = {"Host": f"{conn.host}:{conn.port}", "User-Agent": "serverbench-verify", **sent.get("headers", {})}
    body = sent["body"].encode() if "body" in sent else None
    conn.request(sent.get("method", "GET"), path, body=body, headers=headers)
    return conn.getresponse()


def _read_head(response: http.client.HTTPResponse, result: Verification) -> None:
    """The answer's status, version and headers into ``result``, with its framing where a header declares it."""
    result.status = response.status
    result.http_version = {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(response.version, str(response.version))
    result.headers = {k.lower(): v for k, v in response.getheaders()}
    result.content_type = result.headers.get("content-type")
    result.chunked = "chunked" in result.headers.get("transfer-encoding", "").lower()
    if result.chunked:
        result.framing = Framing.CHUNKED
    elif "content-length" in result.headers:
        result.framing = Framing.CONTENT_LENGTH
        try:
            result.content_length = int(result.headers["content-length"])
        except ValueError:
            result.problems.append(f"bad Content-Length {result.headers['content-length']!r}")


def _read_body(response: http.client.HTTPResponse, result: Verification, timeout: float) -> bytes | None:
    """The body; None where it did not end within the timeout. Without a declared length it ends
    where the server closes the connection, so a server that keeps it open is found here."""
    try:
        return response.read()
    except TimeoutError:
        if result.framing is not None:
            raise
        result.framing = Framing.UNDELIMITED
        result.problems.append(undelimited(f"it did not close it within {timeout:g} s"))
        return None


def _raw_request(host: str, port: int, path: str, sent: dict | None) -> bytes:
    """The request ``_send`` makes, as bytes for a socket of its own."""
    sent = sent or {}
    body = sent.get("body", "").encode()
    headers = {"Host": f"{host}:{port}", "User-Agent": "serverbench-verify", **sent.get("headers", {})}
    if body:
        headers["Content-Length"] = str(len(body))
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"{sent.get('method', 'GET')} {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1") + body


def _receive(sock: socket.socket, done, data: bytes = b"") -> tuple[bytes, bool]:
    """Bytes from ``sock`` added to ``data`` until ``done(data)`` holds or the server closes the
    connection (a reset is a close); the bytes, and whether it closed."""
    while not done(data):
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


def _kept_open(host, port, path: str, sent: dict | None, timeout: float, body_bytes: int) -> str | None:
    """How the server was seen to keep the connection open after an answer with neither
    Content-Length nor chunked encoding; None where it closed it (that close ends the answer).
    On a connection of its own: the same request, and once the answer's ``body_bytes`` are in,
    the request again. A server that closes answers only the first."""
    request = _raw_request(host, port, path, sent)

    def answered(data: bytes) -> bool:
        head_end = data.find(b"\r\n\r\n")
        return head_end >= 0 and len(data) >= head_end + 4 + body_bytes

    with socket.create_connection((host, port), timeout=timeout) as sock:
        try:
            sock.sendall(request)
            first, closed = _receive(sock, answered)
            if closed:
                return None
            status_line, before = first.split(b"\r\n", 1)[0] + b"\r\n", len(first)
            sock.sendall(request)
            _, closed = _receive(sock, lambda data: status_line in data[before:], first)
        except (BrokenPipeError, ConnectionResetError):
            return None  # it had closed when the second request was written
        except TimeoutError:
            return f"it held a connection open for {timeout:g} s after the answer"
    return None if closed else "it answered another request on it"


def answer_problems(result: Verification, body: bytes, expect: dict) -> list[str]:
    """How an answer (its head in ``result``) differs from the expected one."""
    problems = []
    if result.status != expect["status"]:
        problems.append(f"status {result.status}, expected {expect['status']}")
    problems.extend(body_problems(body, expect))
    if not result.content_type:
        problems.append("no Content-Type header")
    elif expect.get("content_type") and result.content_type.split(";")[0].strip() != expect["content_type"]:
        problems.append(f"Content-Type {result.content_type!r}, expected {expect['content_type']!r}")
    return problems


def _keepalive(conn, response, body: bytes, path: str, sent: dict | None, expect: dict) -> str:
    """The keep-alive class: the answer said it closes (Connection: close, HTTP/1.0, or an answer
    the close ends), or the same request is asked again on the connection."""
    if response.will_close:
        return "closes-announced"
    try:
        second = _send(conn, path, sent)
        second_body = second.read()
    except (OSError, http.client.HTTPException):
        return "closes-silently"
    # The same answer again: its status and checks (an answer from a database differs in its rows).
    same = second.status == response.status and (second_body == body or not body_problems(second_body, expect))
    return "keeps" if same else "broken"
