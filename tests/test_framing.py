"""Request framing checks against two real servers on real sockets
(tests/apps/framing_server.py): a strict one that answers anything malformed or
ambiguous with 400 (an unknown transfer coding 501) and closes, and a lax one that
reads everything as leniently as it can, answers 200 and keeps the connection.
Then the judge on what a server can do that neither does, and the page's panel
and the Answers' sentence on the two servers' rows."""

import subprocess
import sys
from dataclasses import asdict

import pandas as pd
import pytest
from serverbench import REPO_ROOT
from serverbench.cell.servers import free_port
from serverbench.cell.wire import Answer
from serverbench.lenses.http import framing, probes
from serverbench.lenses.http.report import conformance_matrix, framing_panel, framing_sentences, protocol_differences

SERVER = REPO_ROOT / "tests" / "apps" / "framing_server.py"
CASES = {case.name: case for case in framing.CASES}


@pytest.fixture(scope="module")
def judged():
    """Every framing check against the strict and the lax server, by mode and check name."""
    found = {}
    for mode in ("strict", "lax"):
        port = free_port("127.0.0.1")
        process = subprocess.Popen(
            [sys.executable, str(SERVER), str(port), "--mode", mode], stderr=subprocess.PIPE, text=True
        )
        try:
            assert process.stderr.readline().strip() == "ready"
            found[mode] = {check.check: check for check in framing.check_all(probes.Target("127.0.0.1", port))}
        finally:
            process.kill()
            process.wait()
    return found


def test_there_are_at_least_fifteen_checks_in_every_class_the_rfcs_name():
    assert len(framing.CASES) >= 15 and len(CASES) == len(framing.CASES)
    assert set(framing.KINDS) == {
        "content-length",
        "transfer-encoding",
        "field syntax",
        "chunk framing",
        "host",
        "line ends",
    }
    for case in framing.CASES:
        assert case.words.startswith("RFC 91") and any(word in case.words for word in ("MUST", "SHOULD", "MAY"))


def test_the_strict_server_passes_every_check(judged):
    strict = judged["strict"]
    assert {name: check.outcome for name, check in strict.items() if check.outcome != "pass"} == {}
    assert strict["te_unknown"].note.startswith("rejected with 501, then closed")
    assert all(check.note.startswith("rejected with 40") or "501" in check.note for check in strict.values())
    assert all(". RFC 91" in check.note and check.group == framing.GROUP for check in strict.values())


def test_the_lax_server_fails_the_musts_and_is_found_desynchronised(judged):
    lax = judged["lax"]
    must_reject = [case.name for case in framing.CASES if case.requires in ("reject", "close", "no-overflow")]
    assert {name: lax[name].outcome for name in must_reject} == dict.fromkeys(must_reject, "fail")
    # Two Content-Lengths that differ: it took the first, so GET /big hidden in the body was answered.
    hidden = lax["cl_duplicate_differ"].note
    assert hidden.startswith("desynchronised: answered GET /big, a request hidden in the body")
    assert "it used the first Content-Length (5)" in hidden
    assert "it used Content-Length 5" in lax["cl_plus_sign"].note
    assert "read the size modulo 2^64" in lax["chunk_size_overflow"].note
    assert "requires closing after answering" in lax["te_and_cl_kept_open"].note
    # What the RFC lets a server repair or accept is information; what it should refuse, a warning.
    assert {lax[name].outcome for name in ("obs_fold", "bare_cr", "nul_in_value", "bare_lf", "cl_list_same")} == {
        "info"
    }
    assert {lax[name].outcome for name in ("te_chunked_twice", "chunk_size_prefix", "field_name_not_token")} == {"warn"}


def _seen(*answers, ending="open"):
    return framing.Seen([Answer("HTTP/1.1", status, "", [], body, b"") for status, body in answers], ending)


def test_the_judge_on_what_neither_test_server_does():
    reject = CASES["cl_duplicate_differ"]  # MUST 400, then close
    assert framing.judge(reject, _seen((400, b"no"), (200, framing.HELLO)), app=True)[0] == "fail"
    assert framing.judge(reject, _seen(ending="closed"), app=True) == (
        "warn",
        "closed without an answer: safe, but the RFC requires a 400 first",
    )
    # The server waits for more body: the marker was read as body.
    outcome, note = framing.judge(reject, _seen(), app=True)
    assert outcome == "fail" and note.startswith("desynchronised: no answer at all")
    outcome, note = framing.judge(reject, _seen((200, b"ping\n")), app=True)
    assert outcome == "fail" and "the marker sent after it was never answered" in note
    # Body bytes read as a request: an answer after the first that is not the marker's.
    outcome, note = framing.judge(CASES["cl_negative"], _seen((200, b""), (400, b"bad")), app=True)
    assert outcome == "fail" and "body bytes were read as a request" in note
    # A server without the apps' paths answers hello to everything: a third answer gives it away.
    three = _seen((200, framing.HELLO), (200, framing.HELLO), (200, framing.HELLO))
    assert framing.judge(CASES["te_and_cl_kept_open"], three, app=False)[0] == "fail"
    # Closing after answering is what a Content-Length beside Transfer-Encoding requires, whatever the answer.
    assert framing.judge(CASES["te_and_cl_kept_open"], _seen((200, b"ping\n"), ending="closed"), app=True)[0] == "pass"
    # The marker handed to the app as body (Starman, two Content-Lengths): read as body, then closed.
    outcome, note = framing.judge(reject, _seen((200, b"ping\n" + framing.MARKER), ending="closed"), app=True)
    assert outcome == "fail" and "the marker sent after it was handed to the app as body" in note
    # A huge chunk size that a server waits out is no overflow.
    assert framing.judge(CASES["chunk_size_overflow"], _seen(), app=True)[0] == "pass"


def _rows(judged) -> pd.DataFrame:
    rows = [
        {"profile": "p", "server": f"{mode}-server", "language": "python", **asdict(check)}
        for mode, checks in judged.items()
        for check in checks.values()
    ]
    other = {
        "profile": "p",
        "language": "python",
        "check": "date",
        "note": "",
        "group": "",
        "kind": "",
        "requirement": "",
    }
    rows += [
        {**other, "server": "strict-server", "outcome": "pass"},
        {**other, "server": "lax-server", "outcome": "fail"},
    ]
    return pd.DataFrame(rows)


def test_the_panel_and_the_answers_count_the_musts_met(judged):
    table = _rows(judged)
    musts = sum(case.requires != "should" and case.requires != "may" for case in framing.CASES)
    panel = framing_panel(table)
    assert panel["kinds"] == framing.KINDS
    strict, lax = panel["rows"]
    assert strict["server"] == "strict-server" and strict["total"]["text"] == f"{musts}/{musts}"
    assert lax["total"]["outcome"] == "fail" and lax["total"]["text"].endswith("⚠")
    assert "cl_duplicate_differ: desynchronised" in lax["cells"][0]["title"]
    sentences = framing_sentences(table)
    assert sentences[0] == f"strict-server met all {musts} MUSTs of RFC 9112/9110 on request framing."
    assert (
        sentences[1].startswith("lax-server broke ")
        and "among them cl_duplicate_differ (desynchronised" in (sentences[1])
    )
    assert "it took 5 of 5 requests it should refuse" in sentences[1]
    # The other checks keep their matrix; the framing checks are not in it, nor in the pairs' sentences.
    assert conformance_matrix(table)["python"]["checks"] == ["date"]
    verdicts = pd.DataFrame([{"kind": "family", "profile": "p", "a": "lax-server", "b": "strict-server"}])
    assert protocol_differences(verdicts, table) == [
        "lax-server fails date (), which strict-server, compared with it, passes."
    ]


def test_a_must_closed_silently_is_broken_alike_in_the_panel_and_the_sentence():
    """A request a MUST says to reject with a 400, closed without a word (warn: safe, but the
    400 was owed), counts as a broken MUST in the panel and in the sentence alike; every other
    check of the planted server passes."""
    rows = []
    silent = next(case for case in framing.CASES if case.requires == "reject")
    for case in framing.CASES:
        seen = _seen(ending="closed") if case is silent else _seen((400, b"bad\n"), ending="closed")
        outcome, did, desync = framing.judged(case, seen, app=True)
        check = probes.Check(
            case.name,
            outcome,
            did,
            group=framing.GROUP,
            kind=case.kind,
            requirement=framing.REQUIREMENT_LEVEL[case.requires],
            did=did,
            words=case.words,
            desynchronised=desync,
            met=outcome in ("pass", "info"),
        )
        rows.append({"profile": "p", "server": "quiet-server", "language": "python", **asdict(check)})
    table = pd.DataFrame(rows)
    planted = table.set_index("check").loc[silent.name]
    assert planted["outcome"] == "warn" and not planted["met"] and "requires a 400" in planted["did"]
    musts = int((table["requirement"] == "MUST").sum())
    broken = table[(table["requirement"] == "MUST") & ~table["met"].astype(bool)]
    assert list(broken["check"]) == [silent.name], broken[["check", "outcome", "did"]]
    (row,) = framing_panel(table)["rows"]
    assert row["total"]["text"] == f"{musts - 1}/{musts}" and silent.name in row["total"]["title"]
    (sentence,) = framing_sentences(table)
    assert sentence.startswith(f"quiet-server broke 1 of {musts} MUSTs of RFC 9112/9110 on request framing")
    assert "closed safely without the 400 owed" in sentence and silent.name in sentence
