"""An answer with neither Content-Length nor chunked encoding: measured where the server
closes the connection after it (close-delimited, RFC 9112 6.3: valid, flagged for the
connection every request then pays), failed, saying why, where the server keeps the
connection open (no end a client can see but the server's idle timeout).

First the verifier against a small server of the test's own on a real socket
(tests/apps/unframed_server.py), then real cells: pyruvate and uWSGI's psgi plugin
hosting apps that set no Content-Length (tests/apps/no_length.py, no_length.psgi)."""

import shutil
import subprocess
import sys

import pytest
from conftest import RECORDS_V1, measure_cell, require_server
from serverbench import REPO_ROOT
from serverbench.cell import verify
from serverbench.cell.servers import free_port
from serverbench.plan import config as cfg
from serverbench.record import flags
from serverbench.record.model import load_record
from serverbench.record.vocabulary import Framing, Status

APPS = REPO_ROOT / "tests" / "apps"
HELLO = {"status": 200, "body": "Hello World!", "content_type": "text/plain"}


def started(script: str, *arguments: str):
    """A test server of tests/apps on a free port, once it says it is ready: (process, port)."""
    port = free_port("127.0.0.1")
    process = subprocess.Popen(
        [sys.executable, str(APPS / script), str(port), *arguments], stderr=subprocess.PIPE, text=True
    )
    assert process.stderr.readline().strip() == "ready"
    return process, port


@pytest.fixture
def unframed_server():
    """Starts unframed_server.py with the given arguments; each one killed at the end."""
    processes = []

    def start(*arguments: str) -> int:
        process, port = started("unframed_server.py", *arguments)
        processes.append(process)
        return port

    yield start
    for process in processes:
        process.kill()
        process.wait()


def test_a_close_delimited_answer_is_a_right_answer_that_closes(unframed_server):
    port = unframed_server("--mode", "closes")
    check = verify.verify("127.0.0.1", port, HELLO)
    assert check.ok, check.problems
    assert check.framing == Framing.CLOSE_DELIMITED and check.http_version == "HTTP/1.1"
    assert check.content_length is None and not check.chunked and check.body_bytes == 12
    assert check.keepalive == "closes-announced"


def test_an_answer_without_length_on_a_connection_kept_open_is_wrong_and_says_why(unframed_server):
    """The server answers a second request after the first answer (found on a connection of
    the verifier's own): a client sees the first end only at the server's idle timeout."""
    port = unframed_server("--mode", "keeps-open", "--idle", "1")
    check = verify.verify("127.0.0.1", port, HELLO)
    assert not check.ok and check.framing == Framing.UNDELIMITED and check.keepalive == "broken"
    (problem,) = check.problems
    assert "kept the connection open after the answer (it answered another request on it)" in problem
    assert "Plack::Middleware::ContentLength" in problem


def test_an_answer_without_length_that_outlasts_the_timeout_is_wrong_and_says_why(unframed_server):
    port = unframed_server("--mode", "keeps-open", "--idle", "60")
    check = verify.verify("127.0.0.1", port, HELLO, timeout=1)
    assert not check.ok and check.framing == Framing.UNDELIMITED
    (problem,) = check.problems
    assert "kept the connection open after the answer (it did not close it within 1 s)" in problem


def test_framed_answers_say_how_they_end():
    """tests/apps/http_server.py: a Content-Length, the connection kept."""
    process, port = started("http_server.py")
    try:
        check = verify.verify("127.0.0.1", port, HELLO)
    finally:
        process.kill()
        process.wait()
    assert check.ok, check.problems
    assert check.framing == Framing.CONTENT_LENGTH and check.content_length == 12 and check.keepalive == "keeps"


def test_the_close_delimited_flag_follows_the_verifications_framing():
    """A real record (uWSGI with the hello app: its answers have a Content-Length)."""
    thresholds = cfg.load(REPO_ROOT / "config.yaml")["flags"]
    record = load_record(RECORDS_V1 / "cells/default/hello/wrk/uwsgi/c10/r1.json")
    record.verify.framing = Framing.CONTENT_LENGTH
    assert "close_delimited" not in flags.cell_flags(record, thresholds)
    record.verify.framing = Framing.CLOSE_DELIMITED
    assert "close_delimited" in flags.cell_flags(record, thresholds)
    assert "every request pays a new connection" in flags.FLAG_HELP["close_delimited"]


@pytest.fixture
def no_length_app(base_config, tmp_path):
    """The run's app: the hello world with no Content-Length, in both languages."""
    directory = tmp_path / "no-length"
    directory.mkdir()
    shutil.copy(APPS / "no_length.py", directory)
    shutil.copy(APPS / "no_length.psgi", directory)
    base_config["apps"]["no_length"] = {
        "python": {"dir": str(directory), "module": "no_length", "callable": "application"},
        "perl": {"file": str(directory / "no_length.psgi")},
    }
    base_config["app"] = "no_length"
    return base_config


def test_a_real_server_that_closes_after_each_answer_is_measured_and_flagged(no_length_app, tmp_path, no_leftovers):
    """pyruvate answers HTTP/1.1 with neither header and closes: measured, flagged close_delimited.
    wrk counts each such answer as a read error too (its figures flagged keepalive_broken)."""
    require_server("pyruvate", no_length_app)
    record = measure_cell(no_length_app, tmp_path / "cells", server="pyruvate")
    assert record["status"] == Status.OK, record["reason"]
    assert record["verify"]["framing"] == Framing.CLOSE_DELIMITED and record["verify"]["ok"]
    assert {"close_delimited", "no_keepalive"} <= set(record["flags"]), record["flags"]
    assert record["load"]["requests"] > 0


def test_uwsgi_keeping_the_connection_open_after_such_an_answer_fails_saying_why(no_length_app, tmp_path, no_leftovers):
    """uWSGI's psgi plugin (--http11-socket) sends neither header, then waits on the connection
    for another request until its socket timeout: the answer has no end a client can see."""
    require_server("uwsgi-psgi", no_length_app)
    record = measure_cell(no_length_app, tmp_path / "cells", server="uwsgi-psgi")
    assert record["status"] == Status.FAILED
    assert record["verify"]["framing"] == Framing.UNDELIMITED
    assert "kept the connection open after the answer" in record["reason"], record["reason"]
