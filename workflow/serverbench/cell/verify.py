"""Checks a server's answer before it is measured.

Two requests go over one connection so that the keep-alive behaviour is known
before the load tool meets it: ``keeps`` (the second request is answered on
the same connection), ``closes-announced`` (the server said Connection: close
or spoke HTTP/1.0 without keep-alive) or ``closes-silently`` (it closed with no
notice: wrk then counts every answer as a read error).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re

from serverbench.record.model import Verification


def _request(conn: http.client.HTTPConnection, path: str):
    conn.request("GET", path, headers={"Host": f"{conn.host}:{conn.port}", "User-Agent": "serverbench-verify"})
    response = conn.getresponse()
    return response, response.read()


def body_problems(body: bytes, expect: dict) -> list[str]:
    """How a body differs from the expected one: exact bytes, a substring, a JSON object's keys,
    a regular expression, or length and SHA-256 for big bodies."""
    problems = []
    if "body" in expect and body != expect["body"].encode():
        problems.append(f"body {body[:80]!r}, expected {expect['body'].encode()[:80]!r}")
    if "contains" in expect and expect["contains"].encode() not in body:
        problems.append(f"body {body[:80]!r} does not contain {expect['contains']!r}")
    if "json_keys" in expect:
        problems.extend(_json_problems(body, expect["json_keys"]))
    if "matches" in expect and not re.search(expect["matches"].encode(), body):
        problems.append(f"body {body[:80]!r} does not match {expect['matches']!r}")
    if "length" in expect and len(body) != expect["length"]:
        problems.append(f"body of {len(body)} bytes, expected {expect['length']}")
    if "body_sha256" in expect and hashlib.sha256(body).hexdigest() != expect["body_sha256"]:
        problems.append(f"body SHA-256 {hashlib.sha256(body).hexdigest()}, expected {expect['body_sha256']}")
    return problems


def _json_problems(body: bytes, keys: list[str]) -> list[str]:
    try:
        found = json.loads(body)
    except ValueError as exc:
        return [f"body {body[:80]!r} is not JSON: {exc}"]
    if not isinstance(found, dict):
        return [f"body is JSON {type(found).__name__}, expected an object with keys {keys}"]
    missing = [key for key in keys if key not in found]
    return [f"JSON object without key(s) {missing} (has {sorted(found)[:10]})"] if missing else []


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
    result.problems.extend(body_problems(body, expect))
    if not result.content_type:
        result.problems.append("no Content-Type header")
    elif expect.get("content_type") and result.content_type.split(";")[0].strip() != expect["content_type"]:
        result.problems.append(f"Content-Type {result.content_type!r}, expected {expect['content_type']!r}")
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
