"""Checks a server's answer before it is measured.

Two requests go over one connection so that the keep-alive behaviour is known
before the load tool meets it: ``keeps`` (the second request is answered on
the same connection), ``closes-announced`` (the server said Connection: close
or spoke HTTP/1.0 without keep-alive) or ``closes-silently`` (it closed with no
notice: wrk then counts every answer as a read error).
"""

from __future__ import annotations

import http.client
from dataclasses import asdict, dataclass, field


@dataclass
class Verification:
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    status: int | None = None
    http_version: str | None = None
    content_type: str | None = None
    content_length: int | None = None
    chunked: bool = False
    body_bytes: int | None = None
    keepalive: str | None = None
    headers: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def reason(self) -> str:
        return "; ".join(self.problems)


def _request(conn: http.client.HTTPConnection, path: str):
    conn.request("GET", path, headers={"Host": f"{conn.host}:{conn.port}", "User-Agent": "serverbench-verify"})
    response = conn.getresponse()
    return response, response.read()


def verify(host: str, port: int, expect: dict, path: str = "/", timeout: float = 5.0) -> Verification:
    result = Verification()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn.auto_open = 0
    try:
        conn.connect()
        response, body = _request(conn, path)
    except (OSError, http.client.HTTPException) as exc:
        result.problems.append(f"request failed: {exc.__class__.__name__}: {exc}")
        conn.close()
        return result

    result.status = response.status
    result.http_version = {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(response.version, str(response.version))
    result.headers = {k.lower(): v for k, v in response.getheaders()}
    result.content_type = result.headers.get("content-type")
    result.chunked = "chunked" in result.headers.get("transfer-encoding", "").lower()
    if "content-length" in result.headers:
        try:
            result.content_length = int(result.headers["content-length"])
        except ValueError:
            result.problems.append(f"bad Content-Length {result.headers['content-length']!r}")
    result.body_bytes = len(body)

    if response.status != expect["status"]:
        result.problems.append(f"status {response.status}, expected {expect['status']}")
    expected_body = expect["body"].encode()
    if body != expected_body:
        result.problems.append(f"body {body[:80]!r}, expected {expected_body[:80]!r}")
    if not result.content_type:
        result.problems.append("no Content-Type header")
    if result.content_length is None and not result.chunked and result.http_version != "HTTP/1.0":
        result.problems.append("neither Content-Length nor chunked encoding")

    announced_close = response.will_close
    if announced_close:
        result.keepalive = "closes-announced"
    else:
        try:
            second, second_body = _request(conn, path)
            result.keepalive = "keeps" if second.status == response.status and second_body == body else "broken"
        except (OSError, http.client.HTTPException):
            result.keepalive = "closes-silently"
    conn.close()
    result.ok = not result.problems
    return result
