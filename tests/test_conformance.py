"""The conformance probes against servers written to break one rule each
(tests/apps/http_server.py): each check fails on its broken server and passes
on the correct one. Then the real catalogue's servers through the probe job."""

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO_ROOT, require
from serverbench.cell.servers import free_port
from serverbench.lenses.http import framing, probes
from serverbench.lenses.http.measure import run_conformance
from serverbench.lenses.http.table import conformance_rows

SERVER = REPO_ROOT / "tests" / "apps" / "http_server.py"


@pytest.fixture
def http_server():
    """Starts tests/apps/http_server.py, correct or breaking one rule; stops it after."""
    started = []

    def start(breaks=None):
        port = free_port("127.0.0.1")
        argv = [sys.executable, str(SERVER), str(port), *(["--breaks", breaks] if breaks else [])]
        process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        assert process.stderr.readline().strip() == "ready"
        started.append(process)
        return probes.Target("127.0.0.1", port), process

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_slow_client_always_makes_an_attempt(http_server):
    """A stall of the machine longer than the probe's window must not pass the check on no
    attempt at all: one new client is always sent."""
    target, _ = http_server()
    waits = probes._new_clients(target, until=time.monotonic() - 1)
    assert len(waits) == 1 and waits[0] is not None


def test_a_correct_server_passes_every_check(http_server):
    target, _ = http_server()
    checks = {check.check: check for check in probes.probe(target.host, target.port)}
    assert set(checks) == {run.__name__ for run in probes.PROBES}
    judged = {name: check.outcome for name, check in checks.items() if name != "server_header"}
    assert set(judged.values()) == {"pass"}, {name: checks[name].note for name in judged if judged[name] != "pass"}
    assert checks["server_header"].outcome == "info" and checks["server_header"].note == "no Server header"


# Each rule http_server.py breaks, the probe it is written to break, that probe's outcome on it,
# and the other probes it breaks too (by their nature: a server that closes after one answer
# cannot answer a pipelined batch either; one that died of a request answers no next client).
# Every probe but server_header (reported, never judged) fails on one of them, and a probe
# whose worst finding is a warn (http10_keepalive) is shown warning.
BROKEN = [
    ("no-date", probes.date, "fail", set()),
    ("wrong-length", probes.content_length, "fail", None),  # None: its extra byte desynchronises them all
    ("ignores-close", probes.connection_close, "fail", {"http10_closes"}),
    ("ignores-close", probes.http10_closes, "fail", {"connection_close"}),
    ("pipeline-order", probes.pipelining, "fail", set()),
    ("head-body", probes.head, "fail", set()),
    ("crash-bad-line", probes.bad_request_line, "fail", set()),
    ("closes-after-one", probes.keepalive_http11, "fail", {"pipelining"}),
    ("silent-close-10", probes.http10_keepalive, "warn", set()),
    ("ignores-chunked", probes.chunked_body, "fail", set()),
    ("refuses-chunked", probes.chunked_body, "warn", set()),
    ("expect-no-body", probes.expect_continue, "fail", set()),
    ("no-continue", probes.expect_continue, "warn", set()),
    ("accepts-big-header", probes.big_header, "warn", set()),
    ("crash-big-header", probes.big_header, "fail", set()),
    ("no-host-ok", probes.missing_host, "fail", set()),
    ("answers-both-lengths", probes.length_and_chunked, "warn", set()),
    ("crash-both-lengths", probes.length_and_chunked, "fail", set()),
    ("stuck-on-partial-head", probes.slow_client, "fail", set()),
]
# Left out of "the others": each waits seconds (the slow client dribbles 3 s, the date needs
# 2 s to advance), and no rule but their own touches what they judge.
SLOW_PROBES = {probes.slow_client, probes.date}


def _broken_by(target, probe) -> set[str]:
    """The probes other than ``probe`` (and the slow ones) that do not pass on ``target``."""
    others = [run for run in probes.PROBES if run is not probe and run not in SLOW_PROBES]
    return {run.__name__ for run in others if run(target).outcome not in ("pass", "info")}


@pytest.mark.parametrize(("breaks", "probe", "outcome", "also"), BROKEN, ids=[row[0] for row in BROKEN])
def test_each_check_fails_on_the_server_that_breaks_it(http_server, breaks, probe, outcome, also):
    target, process = http_server(breaks)
    # The others first: a rule that kills the server is broken by the probe's own request.
    broken_too = _broken_by(target, probe) if also is not None else None
    check = probe(target)
    assert check.outcome == outcome, check
    assert check.note
    assert broken_too == also
    if breaks.startswith("crash-"):
        # The probe's own request took the server down: the next client went unanswered.
        assert "next client" in check.note and process.wait(5) == 3
    # The same probe passes on the correct server.
    correct, _ = http_server()
    assert probe(correct).outcome == "pass"


def test_every_judged_probe_is_shown_failing():
    """The table above covers each probe that judges: a new probe comes with its broken server."""
    judged = {run for run in probes.PROBES if run is not probes.server_header}
    assert {probe for _, probe, _, _ in BROKEN} == judged
    assert {probe for _, probe, outcome, _ in BROKEN if outcome == "fail"} == judged - {probes.http10_keepalive}


def test_evidence_is_kept_and_truncated(http_server):
    target, _ = http_server()
    check = probes.big_header(target)
    assert check.sent.startswith("GET / HTTP/1.1") and check.sent.endswith("bytes)")
    assert len(check.sent) < probes.EVIDENCE_BYTES + 40


def test_a_slow_client_holds_up_a_single_threaded_server(tmp_path):
    """A server that serves one connection at a time makes the second client wait
    for the dribbling one: the created condition, not the machine's speed."""
    script = tmp_path / "one_at_a_time.py"
    script.write_text(
        "import sys, http.server\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    protocol_version = 'HTTP/1.1'\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('Content-Length', '12'); self.end_headers()\n"
        "        self.wfile.write(b'Hello World!')\n"
        "    def log_message(self, *a): pass\n"
        "server = http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H)\n"
        "print('ready', file=sys.stderr, flush=True)\n"
        "server.serve_forever()\n"
    )
    port = free_port("127.0.0.1")
    process = subprocess.Popen([sys.executable, str(script), str(port)], stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr.readline().strip() == "ready"
        check = probes.slow_client(probes.Target("127.0.0.1", port))
    finally:
        process.kill()
        process.wait()
    # Answered only once the slow client gave up (3 s of dribbling): held up, a warn.
    assert check.outcome == "warn" and "held up" in check.note
    assert float(check.received) >= 2.5


def test_a_server_whose_busy_worker_still_accepts_is_held_up_every_time(tmp_path):
    """gunicorn's gthread worker with one thread: its loop still accepts new
    connections (after each second's wait on its busy thread) while that thread
    reads the slow client, and queues them behind it, so every new client waits
    for the slow one to give up. One worker, not two: with a second, free worker a
    new client reaches the held one only when the kernel wakes that one in the
    moment of its accept, so 14 clients in a row once all met the free worker (CI,
    'pass'). The condition is the slow client and the server's design, not the
    machine's speed."""
    require("gunicorn")
    port = free_port("127.0.0.1")
    argv = [
        "gunicorn",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--worker-class",
        "gthread",
        "--threads",
        "1",
        "--chdir",
        str(REPO_ROOT / "apps" / "python"),
        "hello:application",
    ]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        target = probes.Target("127.0.0.1", port)
        for _ in range(100):  # up to 10 s for the workers to boot
            with contextlib.suppress(OSError):
                if probes.keepalive_http11(target).outcome == "pass":
                    break
            time.sleep(0.1)
        checks = [probes.slow_client(target) for _ in range(3)]
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert [check.outcome for check in checks] == ["warn"] * 3, [check.note for check in checks]
    assert all(float(check.received) >= probes.HELD_UP for check in checks)


# What each catalogue server does not pass among the protocol probes, and how: a new version
# that changes one shows here. (Unit's two languages share its HTTP front, and its findings.)
UNIT_FINDINGS = {"head": "fail", "chunked_body": "warn", "expect_continue": "warn", "missing_host": "fail"}
CATALOGUE_FINDINGS = {
    "gunicorn": {"keepalive_http11": "fail", "pipelining": "fail", "missing_host": "fail"},
    "starman": {"head": "fail", "big_header": "warn", "length_and_chunked": "warn"},
    "uwsgi-debian": {
        "http10_keepalive": "warn",
        "connection_close": "fail",
        "pipelining": "fail",
        "head": "fail",
        "chunked_body": "fail",
        "expect_continue": "warn",
        "missing_host": "fail",
        "length_and_chunked": "warn",
        "date": "fail",
    },
    "unit-python": UNIT_FINDINGS,
    "unit-perl": UNIT_FINDINGS,
}


@pytest.mark.parametrize("server", ["gunicorn", "starman", "uwsgi-debian", "unit-python", "unit-perl"])
def test_a_catalogue_server_gets_a_full_row(base_config, tmp_path, no_leftovers, server):
    command = base_config["catalogue"][server]["command"][0]
    if command == "unitd":
        from conftest import require_unitd

        require_unitd()
    else:
        require(command)
    result = run_conformance(base_config, "default", server, tmp_path / "c.json", tmp_path / "c.log")
    assert result["status"] == "ok", result["reason"]
    outcomes = {check["check"]: check["outcome"] for check in result["checks"]}
    names = {run.__name__ for run in probes.PROBES} | {case.name for case in framing.CASES}
    assert set(outcomes) == names | {"app_lint"}
    assert set(outcomes.values()) <= {"pass", "warn", "fail", "info"}
    # The protocol probes' findings, exactly: each is the server's behaviour, not the machine's,
    # but the slow client's (whether a new client meets a busy worker is the scheduler's to say).
    judged = {run.__name__ for run in probes.PROBES} - {"slow_client", "server_header"}
    found = {name: outcomes[name] for name in judged if outcomes[name] != "pass"}
    assert found == CATALOGUE_FINDINGS[server], {check["check"]: check["note"] for check in result["checks"]}
    assert outcomes["server_header"] == "info" and outcomes["slow_client"] in ("pass", "warn")
    rows = conformance_rows([tmp_path / "c.json"])
    assert set(rows["server"]) == {server} and len(rows) >= len(outcomes)
    lint = next(check for check in result["checks"] if check["check"] == "app_lint")
    if server.startswith("unit-"):
        # Unit leaves SCRIPT_NAME out of the environ; both specs let a server omit a key that would
        # be empty, so it is no failure: reported with the spec's words, the rest linted. In Perl
        # it is a warning: Plack::Lint, PSGI's reference linter, dies on it all the same.
        assert "SCRIPT_NAME absent" in lint["note"], lint
        if server == "unit-python":
            assert lint["outcome"] == "info" and "PEP 3333" in lint["note"], lint
        else:
            assert lint["outcome"] == "warn" and "PSGI:" in lint["note"] and "Plack::Lint" in lint["note"], lint
    else:
        assert lint["outcome"] == "pass", lint


def test_a_server_that_cannot_start_is_a_recorded_failure(base_config, tmp_path):
    base_config["catalogue"]["gunicorn"]["command"] = [sys.executable, "-c", "raise SystemExit(3)"]
    result = run_conformance(base_config, "default", "gunicorn", tmp_path / "c.json", tmp_path / "c.log")
    assert result["status"] == "failed" and "could not be probed" in result["reason"]
    rows = conformance_rows([tmp_path / "c.json"])
    assert rows.iloc[0]["check"] == "probe" and rows.iloc[0]["outcome"] == "fail"


def test_the_answers_say_when_a_compared_server_fails_what_its_counterpart_passes():
    import pandas as pd
    from serverbench.lenses.http.report import conformance_matrix, protocol_differences

    rows = [
        ("default", "uwsgi-debian", "python", "head", "fail", "12 body bytes after a HEAD answer"),
        ("default", "uwsgi-debian", "python", "date", "fail", "no Date header"),
        ("default", "starman", "perl", "head", "fail", "12 body bytes after a HEAD answer"),
        ("default", "starman", "perl", "date", "pass", "…"),
        ("default", "gunicorn", "python", "head", "pass", "GET's headers, no body"),
        ("default", "gunicorn", "python", "date", "pass", "…"),
    ]
    conformance = pd.DataFrame(rows, columns=["profile", "server", "language", "check", "outcome", "note"])
    verdicts = pd.DataFrame(
        [
            {"kind": "family", "profile": "default", "a": "uwsgi-debian", "b": "starman"},
            {"kind": "family", "profile": "default", "a": "gunicorn", "b": "starman"},
            {"kind": "family", "profile": "default", "a": "gunicorn", "b": "starman"},  # another concurrency
        ]
    )
    sentences = protocol_differences(verdicts, conformance)
    # Both fail HEAD: no sentence for it; only uWSGI fails Date, which Starman passes.
    assert sentences == [
        "uwsgi-debian fails date (no Date header), which starman, compared with it, passes.",
        "starman fails head (12 body bytes after a HEAD answer), which gunicorn, compared with it, passes.",
    ]
    matrix = conformance_matrix(conformance)
    assert list(matrix) == ["perl", "python"]
    assert matrix["python"]["checks"] == ["head", "date"]
    uwsgi = next(row for row in matrix["python"]["rows"] if row["server"] == "uwsgi-debian")
    assert [cell["outcome"] for cell in uwsgi["cells"]] == ["fail", "fail"]


def test_a_conformance_table_from_before_the_met_column_is_read_by_the_same_rule():
    """conformance.csv written before it had ``met``: each check's is made again from its
    outcome (serverbench.record.conformance.met), where it rests on a requirement."""
    import pandas as pd
    from serverbench.lenses.http.report import met_column
    from serverbench.record.conformance import met

    rows = [("te_and_cl", "pass", "MUST"), ("bare_lf", "fail", "SHOULD"), ("head", "fail", ""), ("date", "pass", None)]
    old = pd.DataFrame(rows, columns=["check", "outcome", "requirement"])
    assert list(met_column(old)) == [True, False, False, False]
    new = old.assign(met=[met("pass"), met("fail"), None, None])
    assert list(met_column(new)) == list(met_column(old))


def test_the_http_lens_closes_the_answers_and_the_page(base_config, tmp_path):
    """The HTTP checks reach the page, answers.md and the console through their lens
    (Place.CLOSING): the pairs' sentence in the page's Answers, before the spread; the matrix
    after the other lenses' sections; in answers.md right after the timed answers; on the
    console at the run's end."""
    import pandas as pd
    from conftest import RECORDS_V1
    from serverbench import registry
    from serverbench.decide.verdicts import read_verdicts
    from serverbench.lens import Place
    from serverbench.report.index import write_index

    rows = [
        ("default", "gunicorn", "python", "date", "pass", "…"),
        ("default", "starman", "perl", "date", "fail", "no Date header"),
    ]
    pd.DataFrame(rows, columns=["profile", "server", "language", "check", "outcome", "note"]).to_csv(
        tmp_path / "conformance.csv", index=False
    )
    read_verdicts(RECORDS_V1 / "verdicts.csv").to_csv(tmp_path / "verdicts.csv", index=False)
    operations = REPO_ROOT / "docs" / "data"
    for name in ("operations.csv", "operations_verdicts.csv"):
        (tmp_path / name).write_bytes((operations / name).read_bytes())
    tables = [tmp_path / name for name in ("conformance.csv", "operations.csv", "operations_verdicts.csv")]
    sections = registry.sections(base_config, tables, {})
    (http,) = [section for section in sections if section.lens == "http"]
    assert http.place == Place.CLOSING
    write_index(
        RECORDS_V1 / "summary.csv",
        tmp_path / "verdicts.csv",
        None,
        {},
        tmp_path / "index.html",
        answers_path=tmp_path / "answers.md",
        sections=sections,
    )
    page, answers = (tmp_path / "index.html").read_text(), (tmp_path / "answers.md").read_text()
    sentence = "starman fails date (no Date header), which gunicorn, compared with it, passes."
    assert page.index("<h3>Speaks HTTP differently</h3>") < page.index(sentence) < page.index('id="operations"')
    assert page.index('id="operations"') < page.index('<section id="conformance">')
    # Its markdown between the timed answers and the lenses after them (operations' follows at once).
    assert f"## Speaks HTTP differently\n\n- {sentence}\n## A server in operation" in answers
    assert answers.index("## Not comparable") < answers.index("## Speaks HTTP differently")
    printed = registry.console_text(base_config, tmp_path, "http")
    assert printed == f"\nspeaks HTTP differently (1):\n  - {sentence}\n"


def test_a_checks_outcome_is_written_as_its_word_and_read_back_as_its_member(tmp_path):
    """A probe's outcome is a CheckOutcome: its result and conformance.csv hold the word, and the
    table reads the word back as the member (an unknown word is refused, not carried along)."""
    from dataclasses import asdict

    from serverbench import files
    from serverbench.lenses.http.record import CheckOutcome
    from serverbench.record.conformance import MET_OUTCOMES

    check = probes.Check("head", CheckOutcome.WARN, "a note")
    result = {"profile": "p", "server": "s", "language": "python", "status": "ok", "checks": [asdict(check)]}
    files.write_json(tmp_path / "s.json", result)
    assert '"outcome": "warn"' in (tmp_path / "s.json").read_text()
    (row,) = conformance_rows([tmp_path / "s.json"]).itertuples()
    assert row.outcome is CheckOutcome.WARN
    assert "head,warn,a note" in conformance_rows([tmp_path / "s.json"]).to_csv(index=False)
    files.write_json(tmp_path / "s.json", {**result, "checks": [{**asdict(check), "outcome": "passed"}]})
    with pytest.raises(ValueError, match="passed"):
        conformance_rows([tmp_path / "s.json"])
    assert set(MET_OUTCOMES) == {CheckOutcome.PASS, CheckOutcome.INFO}
