"""Raw load-tool output → one result record, whatever the tool.

Every parser returns the same keys (``model.LoadResult``). Latencies are in
milliseconds, durations in seconds, sizes in bytes. Error classes:
connect, read, write, timeout, non_2xx, other; ``errors_detail`` keeps the
tool's own names.

One meaning per figure, whatever the tool:
- ``non_2xx`` counts answers whose status is not 2xx or 3xx (wrk's own
  definition; oha's status table is read the same way). ab cannot tell 3xx
  apart: its count may include them, and ``errors_detail`` says so.
- A class the tool cannot observe is ``None``, not 0: ab aborts at its first
  timeout, so its ``timeout`` is None.
- Latency covers answers that came within the timeout. Where none did, every
  latency is ``None``; where some timed out, the percentiles are lower bounds.
  ``latency_note`` says which.
"""

from __future__ import annotations

import json
import re

from serverbench.record.model import ERROR_CLASSES, LATENCY_KEYS


class ParseError(ValueError):
    """The output holds no complete report (the tool aborted or was killed)."""


def empty_record(source: str) -> dict:
    return {
        "source": source,
        "requests": None,
        "duration_s": None,
        "requests_per_s": None,
        "latency_ms": dict.fromkeys(LATENCY_KEYS),
        "latency_note": None,
        "transfer_bytes": None,
        "errors": dict.fromkeys(ERROR_CLASSES, 0),
        "errors_detail": {},
        "errors_total": 0,
        "error_rate": None,
    }


def _latency_caveat(record: dict) -> None:
    """Latency no tool measured is None, and why; timed-out requests make percentiles lower bounds."""
    timeouts = record["errors"]["timeout"] or 0
    answered = (record["requests"] or 0) - (timeouts if record["source"].startswith("wrk") else 0)
    if answered <= 0:
        record["latency_ms"] = dict.fromkeys(LATENCY_KEYS)
        record["latency_note"] = "no answer came within the timeout: latency was not measured"
    elif timeouts:
        record["latency_note"] = (
            f"{timeouts} timed-out requests are not in the latency figures: the percentiles are lower bounds"
        )


def _finish(record: dict) -> dict:
    _latency_caveat(record)
    record["errors_total"] = sum(count for count in record["errors"].values() if count)
    requests = record["requests"] or 0
    attempts = max(requests, 1)
    record["error_rate"] = (
        min(record["errors_total"] / attempts, 1.0) if requests else (1.0 if record["errors_total"] else 0.0)
    )
    return record


_TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_SIZE_UNITS = {"": 1, "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text)
    if not match:
        raise ParseError(f"not a wrk time: {text!r}")
    return float(match.group(1)) * _TIME_UNITS[match.group(2)]


def _bytes(text: str) -> float:
    match = re.fullmatch(r"([0-9.]+)([KMGT]?B?)", text)
    if not match:
        raise ParseError(f"not a wrk size: {text!r}")
    return float(match.group(1)) * _SIZE_UNITS[match.group(2) if match.group(2) else ""]


def parse_wrk(text: str) -> dict:
    """wrk --latency text, preferring the exact JSON line of wrk_report.lua."""
    exact = re.search(r"^SERVERBENCH_WRK_JSON (\{.*\})\s*$", text, re.M)
    if exact:
        return _parse_wrk_json(json.loads(exact.group(1)))
    return _parse_wrk_text(text)


def _parse_wrk_json(data: dict) -> dict:
    record = empty_record("wrk-lua")
    record["requests"] = data["requests"]
    record["duration_s"] = data["duration_us"] / 1e6
    record["requests_per_s"] = data["requests"] / record["duration_s"] if data["duration_us"] else 0.0
    record["transfer_bytes"] = data["bytes"]
    latency = data["latency_us"]
    if data["requests"]:
        names = {"p99_9": "p999"}  # wrk_report.lua's name
        record["latency_ms"] = {key: latency[names.get(key, key)] / 1e3 for key in LATENCY_KEYS}
    errors = data["errors"]
    record["errors"].update(
        connect=errors["connect"],
        read=errors["read"],
        write=errors["write"],
        timeout=errors["timeout"],
        non_2xx=errors["status"],
    )
    record["errors_detail"] = dict(errors)
    return _finish(record)


def _parse_wrk_text(text: str) -> dict:
    record = empty_record("wrk-text")
    total = re.search(r"^\s*(\d+) requests in ([0-9.]+\w+), ([0-9.]+\w*) read", text, re.M)
    if not total:
        raise ParseError("wrk printed no 'requests in' line")
    record["requests"] = int(total.group(1))
    record["duration_s"] = _ms(total.group(2)) / 1e3
    record["transfer_bytes"] = round(_bytes(total.group(3)))
    rate = re.search(r"^Requests/sec:\s+([0-9.]+)", text, re.M)
    record["requests_per_s"] = float(rate.group(1)) if rate else record["requests"] / record["duration_s"]
    stats = re.search(r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
    if stats and record["requests"]:
        record["latency_ms"].update(mean=_ms(stats.group(1)), stdev=_ms(stats.group(2)), max=_ms(stats.group(3)))
        for pct, value in re.findall(r"^\s*(50|75|90|99)%\s+(\S+)", text, re.M):
            record["latency_ms"][f"p{pct}"] = _ms(value)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if sock:
        for key, value in zip(("connect", "read", "write", "timeout"), sock.groups(), strict=False):
            record["errors"][key] = int(value)
    status = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if status:
        record["errors"]["non_2xx"] = int(status.group(1))
    record["errors_detail"] = {k: record["errors"][k] for k in ("connect", "read", "write", "timeout", "non_2xx")}
    return _finish(record)


def _ab_field(text: str, label: str, cast=float):
    match = re.search(rf"^{re.escape(label)}:\s+([0-9.]+)", text, re.M)
    return cast(match.group(1)) if match else None


def parse_ab(text: str) -> dict:
    """ApacheBench (ab) report. ab's latencies are whole milliseconds."""
    record = empty_record("ab-text")
    complete = _ab_field(text, "Complete requests", int)
    duration = _ab_field(text, "Time taken for tests")
    if complete is None or duration is None:
        aborted = re.findall(r"^(apr_\w+.*|.*\(\d+\))$", text, re.M)
        raise ParseError("ab printed no report" + (f": {aborted[-1].strip()}" if aborted else ""))
    record["requests"] = complete
    record["duration_s"] = duration
    record["requests_per_s"] = _ab_field(text, "Requests per second") or (complete / duration if duration else 0.0)
    record["transfer_bytes"] = _ab_field(text, "Total transferred", int)
    total = re.search(r"^Total:\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+(\d+)\s+(\d+)", text, re.M)
    if total and complete:
        record["latency_ms"].update(mean=float(total.group(2)), stdev=float(total.group(3)), max=float(total.group(5)))
        for pct, value in re.findall(r"^\s*(50|75|90|99)%\s+(\d+)", text, re.M):
            record["latency_ms"][f"p{pct}"] = float(value)
    detail = {"failed": _ab_field(text, "Failed requests", int) or 0}
    breakdown = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", text)
    if breakdown:
        detail.update(zip(("connect", "receive", "length", "exceptions"), map(int, breakdown.groups()), strict=False))
    detail["write"] = _ab_field(text, "Write errors", int) or 0
    detail["non_2xx"] = _ab_field(text, "Non-2xx responses", int) or 0
    detail["notes"] = [
        "ab counts 3xx answers as non-2xx too",
        "ab aborts at its first timeout, so it cannot count timeouts (timeout: null)",
        "ab counts a non-2xx answer whose length differs from the first answer's as a length failure too:"
        " length failures up to the number of non-2xx answers are taken to be those",
    ]
    record["errors_detail"] = detail
    record["errors"].update(
        connect=detail.get("connect", 0),
        read=detail.get("receive", 0),
        write=detail["write"],
        timeout=None,
        non_2xx=detail["non_2xx"],
        other=max(0, detail.get("length", 0) - detail["non_2xx"]) + detail.get("exceptions", 0),
    )
    return _finish(record)


def parse_h2load_fairness(text: str) -> dict:
    """Per-client requests/s from ``h2load --h1``: how evenly connections are served."""
    row = re.search(r"^req/s\s*:\s*([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", text, re.M)
    totals = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed", text, re.M)
    if not row or not totals:
        raise ParseError("h2load printed no per-client statistics")
    low, high, mean, sd = map(float, row.groups())
    return {
        "client_rps_min": low,
        "client_rps_max": high,
        "client_rps_mean": mean,
        "client_rps_sd": sd,
        "min_over_mean": round(low / mean, 4) if mean else None,
        "requests_done": int(totals.group(3)),
        "requests_failed": int(totals.group(5)),
    }


# oha's error messages, first match wins: "connection" must not read as "connect".
OHA_ERROR_CLASSES = (
    ("timeout", re.compile(r"timed out|timeout")),
    ("write", re.compile(r"broken pipe|\bwrit(e|ing)\b")),
    ("connect", re.compile(r"refused|\bconnect\b|\bconnecting\b|dns|resolve")),
    ("read", re.compile(r"reset|closed|incomplete|eof|connection error|read")),
)


def _oha_error_class(message: str) -> str:
    text = message.lower()
    return next((name for name, pattern in OHA_ERROR_CLASSES if pattern.search(text)), "other")


def parse_oha(text: str) -> dict:
    """oha's ``--output-format json``: a constant-rate run, latency corrected for
    coordinated omission when ``--latency-correction`` was given (counted from
    when each request was due, not when it was sent)."""
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise ParseError(f"oha printed no complete JSON report: {exc}") from None
    if not isinstance(data, dict) or "summary" not in data:
        raise ParseError("oha printed no JSON report")
    summary = data["summary"]
    statuses = {int(code): int(count) for code, count in (data.get("statusCodeDistribution") or {}).items()}
    reported = {str(name): int(count) for name, count in (data.get("errorDistribution") or {}).items()}
    # Requests still in flight when the duration ends are cut off by oha
    # itself: not the server's errors, and not requests either.
    cut_off = {name: count for name, count in reported.items() if "aborted due to deadline" in name}
    failures = {name: count for name, count in reported.items() if name not in cut_off}
    record = empty_record("oha json")
    responses = sum(statuses.values())
    record["requests"] = responses + sum(failures.values())
    record["duration_s"] = float(summary["total"])
    record["requests_per_s"] = responses / record["duration_s"] if record["duration_s"] else 0.0
    record["transfer_bytes"] = summary.get("totalData")

    def ms(value):
        return None if value is None else float(value) * 1e3

    percentiles = data.get("latencyPercentiles") or {}
    record["latency_ms"].update(
        mean=ms(summary.get("average")),
        max=ms(summary.get("slowest")),
        **{key: ms(percentiles.get(key)) for key in ("p50", "p75", "p90", "p99")},
        p99_9=ms(percentiles.get("p99.9")),
    )
    record["errors_detail"] = {"status_codes": statuses, "errors": failures, "cut_off_at_deadline": cut_off}
    for message, count in failures.items():
        record["errors"][_oha_error_class(message)] += count
    record["errors"]["non_2xx"] = sum(count for code, count in statuses.items() if not 200 <= code < 400)
    return _finish(record)


PARSERS = {"wrk": parse_wrk, "ab": parse_ab, "oha": parse_oha}


def parse(parser: str, text: str) -> dict:
    return PARSERS[parser](text)
