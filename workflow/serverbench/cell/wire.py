"""HTTP/1.x over a raw socket, for the conformance probes: send exact bytes,
read answers one at a time (Content-Length, chunked, or to the close), and
tell whether the server closed the connection. Every wait is bounded."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field

READ_TIMEOUT_S = 2.0
MAX_HEAD = 64 * 1024
MAX_BODY = 1024 * 1024


class WireError(RuntimeError):
    """The bytes on the wire are not an HTTP answer (or none came in time)."""


@dataclass(frozen=True)
class Answer:
    """One HTTP answer as it came off the wire."""

    version: str
    status: int
    reason: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    raw: bytes = b""  # the head and the body, exactly as received

    def header(self, name: str) -> str | None:
        """The first value of a header, by case-insensitive name."""
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    def says_close(self) -> bool:
        return "close" in (self.header("Connection") or "").lower()


class Wire:
    """One client connection to (host, port)."""

    def __init__(self, host: str, port: int, timeout: float = READ_TIMEOUT_S):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.timeout = timeout
        self.buffer = b""

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _more(self, deadline: float) -> bool:
        """Read what has arrived into the buffer; False when the peer closed."""
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            raise WireError("no answer in time") from None
        except ConnectionResetError:
            return False
        self.buffer += chunk
        return bool(chunk)

    def _take(self, count: int) -> bytes:
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    def _head(self, deadline: float) -> bytes:
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > MAX_HEAD:
                raise WireError("answer head over 64 KiB")
            if not self._more(deadline):
                raise WireError("connection closed before an answer" if not self.buffer else "answer cut short")
        return self._take(self.buffer.index(b"\r\n\r\n") + 4)

    def read_answer(self, method: str = "GET", timeout: float | None = None) -> Answer:
        """The next answer (after any 1xx, which ``read_interim`` reads instead)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        head = self._head(deadline)
        version, status, reason, headers = parse_head(head)
        body = b""
        if method != "HEAD" and status >= 200 and status not in (204, 304):
            body = self._body(headers, deadline)
        return Answer(version, status, reason, headers, body, head + body)

    def read_answers(self, quiet: float, most: int, done=None) -> tuple[list[Answer], str]:
        """Answers one after another until the server closes the connection (``closed``), sends
        nothing for ``quiet`` seconds (``open``), sends what is no answer (``garbled: …``),
        ``done(answers)`` says enough (``done``), or ``most`` have come (``open``)."""
        answers: list[Answer] = []
        while len(answers) < most:
            if not self.buffer:
                try:
                    if not self._more(time.monotonic() + quiet):
                        return answers, "closed"
                except WireError:
                    return answers, "open"
                except OSError:
                    return answers, "closed"
            try:
                answers.append(self.read_answer(timeout=quiet))
            except WireError as exc:
                return answers, f"garbled: {exc}"
            except OSError:
                return answers, "closed"
            if done is not None and done(answers):
                return answers, "done"
        return answers, "open"

    def read_interim(self, timeout: float) -> Answer | None:
        """A 1xx answer if one arrives within ``timeout`` (None if nothing did)."""
        deadline = time.monotonic() + timeout
        try:
            while b"\r\n\r\n" not in self.buffer:
                if not self._more(deadline):
                    return None
        except WireError:
            return None
        if not self.buffer.startswith(b"HTTP/1.1 1") and not self.buffer.startswith(b"HTTP/1.0 1"):
            return None
        head = self._take(self.buffer.index(b"\r\n\r\n") + 4)
        version, status, reason, headers = parse_head(head)
        return Answer(version, status, reason, headers, b"", head)

    def _body(self, headers: list[tuple[str, str]], deadline: float) -> bytes:
        values = {key.lower(): value for key, value in headers}
        if "chunked" in values.get("transfer-encoding", "").lower():
            return self._chunked(deadline)
        if "content-length" in values:
            length = int(values["content-length"])
            while len(self.buffer) < min(length, MAX_BODY):
                if not self._more(deadline):
                    break
            return self._take(length)
        while len(self.buffer) < MAX_BODY and self._more(deadline):  # to the close
            pass
        return self._take(len(self.buffer))

    def _chunked(self, deadline: float) -> bytes:
        """The decoded body of a chunked answer (its framing is checked, not kept)."""
        body = b""
        while True:
            while b"\r\n" not in self.buffer:
                if not self._more(deadline):
                    raise WireError("chunked answer cut short")
            size_line = self._take(self.buffer.index(b"\r\n") + 2)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            while len(self.buffer) < size + 2:
                if not self._more(deadline):
                    raise WireError("chunked answer cut short")
            body += self._take(size)
            self._take(2)
            if size == 0:
                return body

    def read_to_close(self, within: float) -> bytes:
        """Everything the server sends until it closes, or until ``within`` seconds pass."""
        deadline = time.monotonic() + within
        try:
            while len(self.buffer) < MAX_HEAD + MAX_BODY and self._more(deadline):
                pass
        except (WireError, OSError):
            pass
        return self._take(len(self.buffer))

    def closed(self, within: float) -> bool:
        """True if the server closes the connection within ``within`` seconds
        (bytes that arrive meanwhile are kept for the next read)."""
        deadline = time.monotonic() + within
        try:
            while time.monotonic() < deadline:
                if not self._more(deadline):
                    return True
        except WireError:
            return False
        except OSError:
            return True
        return False


def parse_head(head: bytes) -> tuple[str, int, str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise WireError(f"not an HTTP status line: {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        if line and ":" in line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return parts[0], int(parts[1]), parts[2] if len(parts) > 2 else "", headers


def request(method: str, path: str = "/", version: str = "HTTP/1.1", headers=(), body: bytes = b"") -> bytes:
    """The bytes of a request; ``headers`` are sent as given (a Host comes first
    unless a header list that lacks one is the point)."""
    lines = [f"{method} {path} {version}", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
