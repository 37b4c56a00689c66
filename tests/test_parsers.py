"""Parsers on real wrk and ab outputs captured from real servers
(tests/data/raw: gunicorn clean, a 500-answering app, a 2 s app against a
1 s timeout, uWSGI's --http router that closes kept-alive connections)."""

import pytest
from conftest import RAW
from serverbench.cell import parsers

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick


def parse(tool, name):
    return parsers.parse(tool, (RAW / name).read_text())


def test_wrk_clean_text():
    record = parse("wrk", "wrk-clean.txt")
    assert record["source"] == "wrk-text"
    assert record["requests"] == 14581
    assert record["duration_s"] == pytest.approx(2.10)
    assert record["requests_per_s"] == pytest.approx(6945.11)
    assert record["latency_ms"]["mean"] == pytest.approx(1.42)
    assert record["latency_ms"]["stdev"] == pytest.approx(0.21859)
    assert record["latency_ms"]["p99"] == pytest.approx(2.14)
    assert record["latency_ms"]["max"] == pytest.approx(7.28)
    assert record["transfer_bytes"] == round(2.10 * 1024**2)
    assert record["errors_total"] == 0 and record["error_rate"] == 0


def test_wrk_lua_line_is_exact_and_agrees_with_text():
    record = parse("wrk", "wrk-clean-lua.txt")
    assert record["source"] == "wrk-lua"
    assert record["requests"] == 14843
    assert record["duration_s"] == pytest.approx(2.099548)
    assert record["requests_per_s"] == pytest.approx(14843 / 2.099548)
    assert record["transfer_bytes"] == 2241293
    assert record["latency_ms"]["p50"] == pytest.approx(1.378)
    assert record["latency_ms"]["p99_9"] == pytest.approx(3.0)  # the Lua line's p999 (wrk's text has none)
    text = parsers._parse_wrk_text((RAW / "wrk-clean-lua.txt").read_text())
    assert text["requests_per_s"] == pytest.approx(record["requests_per_s"], rel=0.001)
    assert text["latency_ms"]["p99"] == pytest.approx(record["latency_ms"]["p99"], rel=0.01)


@pytest.mark.parametrize("name", ["wrk-non2xx.txt", "wrk-non2xx-lua.txt"])
def test_wrk_non_2xx(name):
    record = parse("wrk", name)
    assert record["errors"]["non_2xx"] == record["requests"] > 14000
    assert record["error_rate"] == 1.0


@pytest.mark.parametrize("name", ["wrk-readerrors.txt", "wrk-readerrors-lua.txt"])
def test_wrk_read_errors_when_keepalive_is_broken(name):
    record = parse("wrk", name)
    assert record["errors"]["read"] == record["requests"] - 1
    assert record["errors"]["non_2xx"] == 0


def test_wrk_timeouts_and_units_in_bytes():
    record = parse("wrk", "wrk-timeout.txt")
    assert record["errors"]["timeout"] == 1
    assert record["requests"] == 1
    assert record["transfer_bytes"] == 151
    assert record["requests_per_s"] == pytest.approx(0.5)


def test_ab_clean():
    record = parse("ab", "ab-clean.txt")
    assert record["source"] == "ab-text"
    assert record["requests"] == 5000
    assert record["duration_s"] == pytest.approx(0.772)
    assert record["requests_per_s"] == pytest.approx(6472.59)
    assert record["latency_ms"] == {
        "mean": 2,
        "stdev": 0.2,
        "max": 3,
        "p50": 2,
        "p75": 2,
        "p90": 2,
        "p99": 2,
        "p99_9": None,
    }
    assert record["transfer_bytes"] == 755000
    assert record["errors_total"] == 0


def test_ab_non_2xx():
    record = parse("ab", "ab-non2xx.txt")
    assert record["errors"]["non_2xx"] == 2000
    assert record["errors_detail"]["failed"] == 0
    assert record["error_rate"] == 1.0


def test_ab_against_closing_server_reports_no_keepalive_requests():
    record = parse("ab", "ab-readerrors.txt")
    assert record["requests"] == 2000 and record["errors_total"] == 0


def test_ab_aborted_by_timeout_is_a_parse_error_with_the_reason():
    with pytest.raises(parsers.ParseError, match="timeout specified has expired"):
        parse("ab", "ab-timeout.txt")


def test_ab_failed_breakdown():
    text = (
        (RAW / "ab-clean.txt")
        .read_text()
        .replace(
            "Failed requests:        0\n",
            "Failed requests:        7\n"
            "   (Connect: 1, Receive: 2, Length: 3, Exceptions: 1)\n"
            "Write errors:           4\n",
        )
    )
    record = parsers.parse("ab", text)
    assert record["errors"] == {"connect": 1, "read": 2, "write": 4, "timeout": None, "non_2xx": 0, "other": 4}


def test_both_tools_give_the_same_keys():
    wrk = parse("wrk", "wrk-clean.txt")
    ab = parse("ab", "ab-clean.txt")
    assert wrk.keys() == ab.keys()
    assert wrk["latency_ms"].keys() == ab["latency_ms"].keys()
    assert wrk["errors"].keys() == ab["errors"].keys()


def test_empty_output_is_a_parse_error():
    with pytest.raises(parsers.ParseError):
        parsers.parse("wrk", "")


# oha --output-format json, constant rate with --latency-correction: against
# gunicorn (clean), gunicorn killed a second into the run (connect errors),
# python -m http.server answering 404 (non-2xx) and a socket that never
# answers (timeouts).


def test_oha_clean():
    record = parse("oha", "oha-clean.json")
    assert record["source"] == "oha json"
    assert record["requests"] == 1000
    assert record["requests_per_s"] == pytest.approx(1000 / 2.000751575)
    assert record["latency_ms"]["p50"] == pytest.approx(0.277235)
    assert record["latency_ms"]["p99"] == pytest.approx(1.021571)
    assert record["latency_ms"]["max"] == pytest.approx(4.861636)
    assert record["latency_ms"]["p99_9"] == pytest.approx(4.861636)
    assert record["transfer_bytes"] == 12000
    assert record["errors_total"] == 0 and record["error_rate"] == 0


def test_oha_connect_errors_after_the_server_died():
    record = parse("oha", "oha-connect-errors.json")
    # "Connection refused" is a connect error; a bare "connection error" is one on an open connection.
    assert record["errors"]["connect"] == 995
    assert record["errors"]["read"] == 4
    assert record["requests"] == 501 + 999
    assert record["error_rate"] == pytest.approx(999 / 1500)


def test_oha_non_2xx():
    record = parse("oha", "oha-non2xx.json")
    assert record["errors"]["non_2xx"] == record["requests"] == 100
    assert record["error_rate"] == 1.0


def test_oha_timeouts_and_the_deadline_cut_off():
    record = parse("oha", "oha-timeout.json")
    assert record["errors"]["timeout"] == 5
    # Requests in flight when the duration ran out are oha's, not the server's.
    assert record["errors_detail"]["cut_off_at_deadline"] == {"aborted due to deadline": 5}
    assert record["requests"] == 5 and record["errors_total"] == 5


def test_oha_without_a_report():
    with pytest.raises(parsers.ParseError):
        parsers.parse("oha", "error: connection refused\n")


# One meaning per figure (issue: every number means one thing).


def test_wrk_with_no_answer_in_time_has_no_latency_and_says_why():
    record = parse("wrk", "wrk-timeout.txt")
    assert record["requests"] == 1 and record["errors"]["timeout"] == 1
    assert set(record["latency_ms"].values()) == {None}
    assert "not measured" in record["latency_note"]


def test_wrk_with_some_timeouts_keeps_latency_as_lower_bounds():
    text = (RAW / "wrk-clean.txt").read_text()
    text = text.replace("Requests/sec:", "  Socket errors: connect 0, read 0, write 0, timeout 12\nRequests/sec:")
    record = parsers.parse("wrk", text)
    assert record["latency_ms"]["p99"] == pytest.approx(2.14)
    assert record["latency_note"].startswith("12 timed-out requests")
    assert parse("wrk", "wrk-clean.txt")["latency_note"] is None


@pytest.mark.parametrize(
    "message, expected",
    [
        ("connection error: Connection reset by peer (os error 104)", "read"),
        ("error writing a body to connection: Broken pipe (os error 32)", "write"),
        ("Connection refused (os error 111)", "connect"),
        ("timeout", "timeout"),
        ("connection closed before message completed", "read"),
        ("something new", "other"),
    ],
)
def test_oha_error_classes(message, expected):
    assert parsers._oha_error_class(message) == expected


def test_non_2xx_means_not_2xx_or_3xx_for_oha_as_for_wrk():
    text = (RAW / "oha-clean.json").read_text().replace('"200": 1000', '"200": 900, "301": 60, "503": 40')
    record = parsers.parse("oha", text)
    assert record["errors"]["non_2xx"] == 40


def test_ab_counts_a_bad_answer_once_and_cannot_count_timeouts():
    text = (
        (RAW / "ab-clean.txt")
        .read_text()
        .replace(
            "Failed requests:        0\n",
            "Failed requests:        500\n   (Connect: 0, Receive: 0, Length: 500, Exceptions: 0)\n"
            "Non-2xx responses:      500\n",
        )
    )
    record = parsers.parse("ab", text)
    assert record["errors"]["non_2xx"] == 500
    assert record["errors"]["other"] == 0
    assert record["errors_total"] == 500
    assert record["errors"]["timeout"] is None
    assert any("timeout" in note for note in record["errors_detail"]["notes"])
