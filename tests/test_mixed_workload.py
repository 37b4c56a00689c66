"""What a workload sends beyond a GET of one path: a mix of several paths by weight in one
run (TechEmpower/FrameworkBenchmarks #5506 asks for mixed endpoints), and a method, body and
header fields (a POST of JSON). Each path is checked before the load as its own workload
says; wrk then sends the requests in turn from a Lua script of the cell's
(cell/loadgen.request_script); a tool without a script cannot, and its cell is skipped
saying so."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import require
from serverbench.cell.phases import run_cell
from serverbench.plan import apps
from serverbench.plan import config as cfg
from serverbench.plan.shapes import Cell

# Answers /a and /b, and logs each path it served where the test reads it.
LOGGING_APP = """
def app(environ, start_response):
    path = environ["PATH_INFO"]
    with open({log!r}, "a") as log:
        log.write(path + "\\n")
    body = path[1:].upper().encode() + b"!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.fixture
def mixed_app(base_config, tmp_path):
    """An app of the test's own with workloads a, b and the mix of a 3 times to b once; yields its log."""
    logs = Path(tempfile.mkdtemp(prefix="serverbench-test-mix-"))
    logs.chmod(0o1777)
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "paths.py").write_text(LOGGING_APP.format(log=str(logs / "served.log")))
    base_config["apps"]["mixed"] = {
        "python": {"dir": str(tmp_path / "mixed"), "module": "paths", "callable": "app"},
        "workloads": {
            "a": {"path": "/a", "expect": {"status": 200, "body": "A!"}},
            "b": {"path": "/b", "expect": {"status": 200, "body": "B!"}},
            "both": {"mix": {"a": 3, "b": 1}},
        },
    }
    base_config["app"] = "mixed"
    base_config["profiles"]["default"]["workloads"] = ["both"]
    yield logs / "served.log"
    shutil.rmtree(logs, ignore_errors=True)


def cell_record(config, tmp_path, tool: str = "wrk"):
    paths = [str(tmp_path / f"both.{suffix}") for suffix in ("json", "load.txt", "server.log")]
    return run_cell(config, Cell("default", tool, "gunicorn", 4, 1, "both"), *paths)


def test_a_mix_sends_each_path_in_its_share(base_config, tmp_path, no_leftovers, mixed_app):
    """Both paths checked first (one request each, and one again on the connection), then wrk's
    threads each cycle /a /a /b /a: three of /a to one of /b, to within a cycle per thread."""
    require("gunicorn", "wrk")
    record = cell_record(base_config, tmp_path)
    assert record["status"] == "ok", record["reason"]
    assert record["workload"]["mix"] == {"/a": 3, "/b": 1} and record["workload"]["path"] is None
    served = mixed_app.read_text().split()
    a, b = served.count("/a"), served.count("/b")
    assert a + b == len(served) and b > 100
    threads = int(record["client"]["argv"][record["client"]["argv"].index("-t") + 1])
    # Verification: /a twice, /b twice; each of the warm-up's and the load's threads ends within a cycle.
    assert abs(a - 3 * b) <= 3 * 2 * threads + 4, (a, b)
    assert record["load"]["requests"] <= len(served)


def test_a_mix_fails_naming_the_path_whose_answer_is_wrong(base_config, tmp_path, no_leftovers, mixed_app):
    require("gunicorn", "wrk")
    base_config["apps"]["mixed"]["workloads"]["b"]["expect"]["body"] = "BEE!"
    record = cell_record(base_config, tmp_path)
    assert record["status"] == "failed", record["reason"]
    assert record["reason"].startswith("wrong answer: b (/b) body differs from byte 1"), record["reason"]


def test_a_mix_under_a_tool_without_a_script_is_skipped(base_config, tmp_path, no_leftovers, mixed_app):
    require("gunicorn", "ab")
    record = cell_record(base_config, tmp_path, tool="ab")
    assert record["status"] == "skipped"
    assert "the both workload mixes paths by weight through wrk's Lua; ab cannot" in record["reason"]


def test_a_mix_is_spread_through_its_cycle():
    known = {"a": {"path": "/a"}, "b": {"path": "/b"}, "c": {"path": "/c"}}
    assert apps.request_order({"a": 3, "b": 1, "c": 1}, known) == ["/a", "/b", "/a", "/c", "/a"]
    assert apps.request_order({"a": 1, "b": 1}, known) == ["/a", "/b"]


@pytest.mark.parametrize(
    ("mix", "where", "detail"),
    [
        ({"a": 1, "nothere": 1}, "apps.mixed.workloads.both.mix.nothere", "not a workload of apps.mixed.workloads"),
        ({"a": 1, "both": 1}, "apps.mixed.workloads.both.mix.both", "with a path of its own"),
    ],
)
def test_a_mix_of_unknown_workloads_is_refused(base_config, tmp_path, mixed_app, mix, where, detail):
    base_config["apps"]["mixed"]["workloads"]["both"]["mix"] = mix
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(base_config)
    assert where in str(caught.value) and detail in str(caught.value), str(caught.value)


def test_a_workload_with_a_path_and_a_mix_is_refused(base_config, mixed_app):
    base_config["apps"]["mixed"]["workloads"]["both"]["path"] = "/a"
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(base_config)
    assert "apps.mixed.workloads.both" in str(caught.value)


# Answers with the method, body length and Content-Type it got, and logs them.
ECHO_APP = """
import json

def app(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length)
    seen = {{"method": environ["REQUEST_METHOD"], "length": len(body), "type": environ.get("CONTENT_TYPE", "")}}
    with open({log!r}, "a") as log:
        log.write(json.dumps(seen) + "\\n")
    answer = json.dumps(seen).encode()
    start_response("201 Created", [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))])
    return [answer]
"""
POSTED = '{"name": "caf\u00e9", "quote": "a \\\\"b\\\\""}'


@pytest.mark.parametrize("tool", ["wrk", "ab"])
def test_a_workload_sends_its_method_body_and_headers(base_config, tmp_path, no_leftovers, tool):
    """A POST with a JSON body (non-ASCII and quotes in it) and its Content-Type: the check and
    every request of the load send it; ab, which sends GETs here, is skipped saying so."""
    require("gunicorn", tool)
    logs = Path(tempfile.mkdtemp(prefix="serverbench-test-post-"))
    logs.chmod(0o1777)
    (tmp_path / "echo").mkdir()
    (tmp_path / "echo" / "echo.py").write_text(ECHO_APP.format(log=str(logs / "seen.log")))
    length = len(POSTED.encode())
    answer = {"method": "POST", "length": length, "type": "application/json"}
    base_config["apps"]["echo"] = {
        "python": {"dir": str(tmp_path / "echo"), "module": "echo", "callable": "app"},
        "workloads": {
            "create": {
                "path": "/items",
                "method": "POST",
                "body": POSTED,
                "headers": {"Content-Type": "application/json"},
                "expect": {"status": 201, "body": json.dumps(answer)},
            }
        },
    }
    base_config["app"] = "echo"
    base_config["profiles"]["default"]["workloads"] = ["create"]
    paths = [str(tmp_path / f"create.{suffix}") for suffix in ("json", "load.txt", "server.log")]
    record = run_cell(base_config, Cell("default", tool, "gunicorn", 4, 1, "create"), *paths)
    try:
        if tool == "ab":
            assert record["status"] == "skipped" and "sends more than a GET through wrk's Lua" in record["reason"]
            return
        assert record["status"] == "ok", record["reason"]
        seen = [json.loads(line) for line in (logs / "seen.log").read_text().splitlines()]
        assert len(seen) >= record["load"]["requests"] > 100
        assert all(request == answer for request in seen), [r for r in seen if r != answer][:3]
    finally:
        shutil.rmtree(logs, ignore_errors=True)
