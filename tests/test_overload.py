"""Past capacity: does it fall over? (issue 95): the overload lens's counts on planted servers.

Each count follows from a condition the planted server creates (tests/apps/overloaded.py), not
from the machine's speed: 20 requests due in a second to a server that holds each of 3 for 3 s and
answers 503 beyond them; 10 to one that answers one at a time, each after 0.2 s; 20 to one that
listens with a backlog of 4 and holds its first request 4 s (the kernel queues 5 more and drops
further SYNs: the client gives up connecting after 2 s); 20 to a port nobody listens on. The
objective (0.15 s) is shorter than every hold, so no answer is within it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict

import pandas as pd
import psutil
import pytest
from conftest import REPO_ROOT, add_server, require
from serverbench import registry
from serverbench.lenses.overload.backlog import own_backlog_config, raised_somaxconn, without_backlog
from serverbench.lenses.overload.client import Answer, count, offer
from serverbench.lenses.overload.decide import overload_verdict_table, write_tables
from serverbench.lenses.overload.hang import ANSWERED, send_hung, with_request_timeout
from serverbench.lenses.overload.measure import Load, run_overload
from serverbench.lenses.overload.recovery import recovery_s
from serverbench.lenses.overload.report import overload_section
from serverbench.lenses.overload.settings import OverloadSettings
from serverbench.lenses.overload.table import overload_table
from serverbench.lenses.overload.words import NO_OWN_BACKLOG, Client, Met
from serverbench.record.vocabulary import Status

PLANTED = REPO_ROOT / "tests" / "apps" / "overloaded.py"
OBJECTIVE_S = 0.15


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int) -> None:
    """Until the port accepts a connection (a connection taken by the server as one request more,
    which it answers: each planted mode reads a request before it holds, so the probe holds none)."""
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the planted server never listened on {port}")


@contextlib.contextmanager
def planted(mode: str, *numbers):
    """The planted server on a free port, until the block ends (then killed and reaped)."""
    port = free_port()
    server = subprocess.Popen([sys.executable, str(PLANTED), mode, str(port), *map(str, numbers)])
    try:
        wait_listening(port)
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.kill()
        server.wait()


def met(url: str, rate: float, **wait) -> dict[str, int]:
    """What each request of a second at ``rate`` met, only the outcomes seen."""
    found = offer("oha", url, rate, 1, Client.FRESH, 32, 10, OBJECTIVE_S, **wait)
    return {outcome: n for outcome, n in found.counts.items() if n}


@pytest.fixture
def oha():
    require("oha")


def test_a_server_that_sheds_one_that_queues_and_one_whose_backlog_overflows_are_told_apart_exactly(oha, no_leftovers):
    with planted("shed", 3, 3) as url:
        shed = met(url, 20)
    with planted("queue", 0.2) as url:
        queued = met(url, 10)
    with planted("backlog", 4, 4) as url:
        overflowed = met(url, 20, connect_timeout_s=2)
    with planted("queue", 0.2) as url:
        pass  # started and killed: nothing listens on its port any more
    refused = met(url, 20)
    assert shed == {Met.LATE: 3, Met.SHED: 17}
    assert queued == {Met.LATE: 10}
    # The held request and the five the kernel queued (a backlog of 4 holds 4 + 1) are answered.
    assert overflowed == {Met.LATE: 6, Met.TIMED_OUT: 14}
    assert refused == {Met.REFUSED: 20}


def test_requests_due_but_never_sent_are_counted_and_every_request_due_is_counted_once():
    report = {"errorDistribution": {"Connection refused (os error 111)": 3, "connection reset by peer": 2}}
    answers = [Answer(0.0, 0.1, 200), Answer(0.1, 0.5, 200), Answer(0.2, 0.25, 503)]
    found = count(10, 1, "fresh", report, answers, OBJECTIVE_S)
    assert {k: v for k, v in found.counts.items() if v} == {
        Met.WITHIN: 1, Met.LATE: 1, Met.SHED: 1, Met.REFUSED: 3, Met.RESET: 2, Met.NEVER_SENT: 2,
    }  # fmt: skip


def steady_answers(rate: float, until_s: float, latency_of) -> list[Answer]:
    due = [i / rate for i in range(int(until_s * rate))]
    return [Answer(t, t + latency_of(t), 200) for t in due]


def test_recovery_is_the_first_window_from_which_every_later_one_meets_the_rate_or_never():
    slow_until = 4.0
    answers = steady_answers(20, 12, lambda t: 1.0 if t < slow_until else 0.01)
    assert recovery_s(answers, 2, 12, 20, OBJECTIVE_S, 0.5, 0.95) == slow_until - 2
    # One late window at the end: it has not come back to stay.
    relapsed = steady_answers(20, 12, lambda t: 1.0 if t < slow_until or t >= 11.5 else 0.01)
    assert recovery_s(relapsed, 2, 12, 20, OBJECTIVE_S, 0.5, 0.95) is None
    # Answers that stop coming (a goodput short of the rate) do not meet it either.
    thinned = [a for i, a in enumerate(answers) if a.due_s < slow_until or i % 2]
    assert recovery_s(thinned, 2, 12, 20, OBJECTIVE_S, 0.5, 0.95) is None


def test_a_planted_server_slow_for_a_set_time_recovers_after_it_and_one_slow_throughout_never(oha, no_leftovers):
    # Slow (0.5 s an answer) until 3 s after its first request, then at once; read from 1 s on.
    with planted("slow", 0.5, 3) as url:
        back = offer("oha", url, 20, 6, Client.FRESH, 64, 10, 0.25)
    with planted("slow", 0.5, 60) as url:
        never = offer("oha", url, 20, 4, Client.FRESH, 64, 10, 0.25)
    recovered = recovery_s(back.answers, 1, 6, 20, 0.25, 0.5, 0.95)
    assert recovered is not None and recovered >= 1.5  # not before the server stopped being slow
    assert recovery_s(never.answers, 1, 4, 20, 0.25, 0.5, 0.95) is None


def test_the_client_has_a_connection_for_every_request_a_holding_server_keeps_in_flight(
    oha, base_config, tmp_path, no_leftovers
):
    """A planted server holds every request 2 s, so at 150 a second the requests in flight grow to
    300 by the stretch's end: the lens's client sends every one of them (none never sent, not
    client-limited), where the old fixed 256 connections leave the rest unsent, flagged."""
    plan = OverloadSettings.from_dict({**LENS_PLAN, "hold_s": 2})
    with planted("hold", 2) as url:
        load = Load(base_config, plan, url, int(url.rsplit(":", 1)[1].strip("/")), tmp_path / "oha.log")
        sized = load.steady(Client.FRESH, 2, 75)
        fixed = offer("oha", url, 150, 2, Client.FRESH, 256, plan.timeout_s, OBJECTIVE_S, shortfall=0.05)
    assert (sized.rate, sized.due, sized.offered_rate) == (150, 300, 150)
    assert {k: v for k, v in sized.counts.items() if v} == {Met.LATE: 300}
    assert not sized.client_limited and sized.sent_rate == 150 and sized.connections >= 300
    assert fixed.client_limited and fixed.counts[Met.NEVER_SENT] >= 300 - 256 - 2
    assert fixed.sent_rate < 0.95 * 150


def test_a_servers_own_backlog_is_its_argv_without_the_placeholder(base_config):
    assert without_backlog(["gunicorn", "--backlog", "{backlog}", "app:application"]) == ["gunicorn", "app:application"]
    assert without_backlog(["x", "--listen={backlog}", "-p", "{port}"]) == ["x", "-p", "{port}"]
    own, why = own_backlog_config(base_config, "uwsgi")
    assert why is None and "{backlog}" not in " ".join(own["catalogue"]["uwsgi"]["command"])
    assert "{backlog}" in " ".join(base_config["catalogue"]["uwsgi"]["command"])  # the shipped one untouched
    templated = [name for name, spec in base_config["catalogue"].items() if spec.get("files")
                 and "{backlog}" in own_backlog_config.__globals__["templates_text"](
                     own_backlog_config.__globals__["server_entry"](base_config, name))]  # fmt: skip
    for name in templated:
        assert own_backlog_config(base_config, name) == (None, NO_OWN_BACKLOG)


def test_somaxconn_is_raised_for_the_run_and_restored_after(tmp_path):
    somaxconn = tmp_path / "somaxconn"
    somaxconn.write_text("100\n")
    with raised_somaxconn(2048, somaxconn) as raised:
        assert raised == {"before": 100, "during": 2048, "raised": True}
    assert somaxconn.read_text() == "100\n"
    with raised_somaxconn(64, somaxconn) as raised:  # already enough: left alone
        assert raised == {"before": 100, "during": 100, "raised": False}


LENS_PLAN = {
    "multiples": [2], "hold_s": 1, "clients": ["fresh"], "client_shortfall": 0.05, "timeout_s": 5,
    "connect_timeout_s": 2,
    "backlogs": ["own", "set"], "step_s": 1, "max_step_s": 1, "rate_steps": 3, "resolution": 0.2, "peak_s": 0.5,
    "objective_p99_ms": 200, "tool": "oha-fresh", "peak_tool": "oha-fresh-closed", "tail_samples": 100,
    "max_connections": 64,
    "burst": {"multiple": 3, "seconds": 1, "after": 0.5, "after_s": 2, "window_s": 0.5, "share": 0.95},
    # One repeat of 2× (too few to judge: the verdicts say so, at no more load).
    "judged": {"multiple": 2, "repeats": 1, "hold_share": 0.9, "collapse_share": 0.5, "margin": 0.05},
}  # fmt: skip


def test_the_lens_goes_past_a_planted_servers_capacity_at_its_own_backlog_and_the_set_one(
    base_config, tmp_path, no_leftovers
):
    """The whole job on a planted server that answers one request at a time, each after 10 ms (its
    capacity near 100 a second, p99 far within the 200 ms objective below it): its capacity found,
    then twice it and a burst, at its own backlog (4096: its argv without `--backlog`) and the
    profile's (2048); every request due counted; the table and the section read the record."""
    require("oha")
    config = base_config
    add_server(config, "planted", ["python", str(PLANTED), "queue", "{port}", "0.01", "--backlog", "{backlog}"])
    config["profiles"]["default"]["overload"] = LENS_PLAN
    path = tmp_path / "planted.json"
    result = run_overload(config, "default", "planted", path, tmp_path / "planted.log")
    assert json.loads(path.read_text()) == result
    own, told = result["conditions"]
    assert (own["backlog"], own["asked_backlog"], own["listen_backlog"]) == ("own", None, 4096)
    assert (told["backlog"], told["asked_backlog"], told["listen_backlog"]) == ("set", 2048, 2048)
    for condition in (own, told):
        assert condition["status"] == Status.OK, condition["reason"]
        assert condition["capacity_rps"] > 0
        assert [(s["phase"], s["multiple"]) for s in condition["stretches"]] == [("steady", 2), ("burst", 3)]
        for stretch in condition["stretches"]:
            assert sum(stretch["counts"].values()) >= stretch["due"] > 0
            side = stretch["server_side"]  # the planted server's one Python process, sampled
            assert side["processes_max"] >= 1 and side["pss_peak_bytes"] > 2**20 and side["cpu_s"] >= 0
        assert condition["stretches"][1]["recovered"] is (condition["stretches"][1]["recovery_s"] is not None)
    table = overload_table([result])
    assert len(table) == 4 and set(table["status"]) == {Status.OK}
    assert (table["server_pss_peak_mb"] > 1).all() and not table["client_limited"].any()
    outputs = {name: tmp_path / f"{name}.csv" for name in ("table", "checks", "verdicts", "hang")}
    write_tables(config, [path], outputs)
    verdicts = pd.read_csv(outputs["verdicts"])
    assert sorted(verdicts["check"]) == ["goodput_at_2x"] * 3 + ["recovery_s"] * 2  # two backlogs, own against set
    assert set(verdicts[verdicts["check"] == "goodput_at_2x"]["outcome"]) == {"undetermined"}
    assert pd.read_csv(outputs["checks"])["check"].tolist() == ["goodput_at_2x", "recovery_s"]
    section = overload_section(outputs["table"], outputs["verdicts"])
    assert section.title == "Past capacity: does it fall over?"
    shown = next(block for block in section.blocks if block.kind == "table")
    sent = [row[shown.columns.index("sent of offered (req/s)")].text for row in shown.rows]
    assert all(cell and "client-limited" not in cell for cell in sent)


JUDGED = {"multiple": 2, "repeats": 5, "hold_share": 0.9, "collapse_share": 0.5, "margin": 0.05}


def planted_record(server: str, goodput: dict, recovery: dict | None = None, sent: float = 200) -> dict:
    """A record as the lens writes it, of a server of capacity 100/s: ``goodput`` maps a backlog
    to its 2× stretches' goodput (answers within the objective per second) by the fresh client;
    ``recovery`` a backlog to its burst's seconds to recover (None: never); ``sent`` the client's
    rate of the 200 a second due (below 190: client-limited)."""
    conditions = []
    for backlog, figures in goodput.items():
        stretches = [{"phase": "steady", "multiple": 2, "client": "fresh", "repeat": k, "goodput_rps": g,
                      "due": 200, "counts": {Met.WITHIN: g}, "offered_rate": 200, "sent_rate": sent,
                      "client_limited": sent < 190} for k, g in enumerate(figures)]  # fmt: skip
        back = (recovery or {}).get(backlog, 1.0)
        stretches.append({"phase": "burst", "multiple": 5, "client": "fresh", "recovery_s": back,
                          "recovered": back is not None, "goodput_rps": 50, "due": 600, "counts": {}})  # fmt: skip
        conditions.append({"backlog": backlog, "status": Status.OK, "capacity_rps": 100.0, "stretches": stretches})
    return {"profile": "p", "server": server, "language": "python", "status": Status.OK, "reason": None,
            "settings": {"clients": ["fresh"], "judged": JUDGED}, "conditions": conditions}  # fmt: skip


def test_goodput_at_twice_capacity_is_classed_holds_sheds_or_collapses_by_the_one_rule_over_repeats(tmp_path):
    """Five repeats of 2× capacity a server: goodput near capacity holds, near 0.7 of it sheds,
    near 0.1 of it collapses, straddling the hold share (0.8 to 1.0) is undetermined, and so are
    three repeats (too few); the burst's recovery is shown (never: says so); own backlog against
    set judged on the same figures; the section says the answer before its table, everywhere."""
    results = [
        planted_record("holder", {"own": [98, 99, 100, 101, 97], "set": [99, 100, 98, 100, 101]}),
        planted_record("shedder", {"set": [70, 72, 69, 71, 68]}, sent=150),
        planted_record("collapser", {"own": [10, 2, 12, 8, 5], "set": [95, 96, 94, 97, 98]}, {"own": None}),
        planted_record("straddler", {"set": [80, 100, 82, 99, 90]}),
        planted_record("few", {"set": [100, 100, 100]}),
    ]
    verdicts = overload_verdict_table(results)
    classed = verdicts[verdicts["check"] == "goodput_at_2x"]
    classed = classed[classed["kind"] == "past capacity"].set_index(["server", "backlog"])["outcome"]
    assert classed.to_dict() == {
        ("holder", "own"): "holds", ("holder", "set"): "holds", ("shedder", "set"): "sheds",
        ("collapser", "own"): "collapses", ("collapser", "set"): "holds", ("straddler", "set"): "undetermined",
        ("few", "set"): "undetermined",
    }  # fmt: skip
    recovered = verdicts[verdicts["check"] == "recovery_s"].set_index(["server", "backlog"])
    assert recovered.loc[("collapser", "own"), "outcome"] == "never recovered"
    assert recovered.loc[("holder", "own"), ["outcome", "a_value"]].tolist() == ["recovered", 1.0]
    backlog = verdicts[verdicts["kind"] == "own backlog"].set_index("server")
    assert backlog.loc["collapser", "outcome"] == "lower" and backlog.loc["holder", "outcome"] == "equivalent"
    assert backlog.loc["collapser", "estimate"] == pytest.approx(-0.886)
    csv, verdicts_csv = tmp_path / "overload.csv", tmp_path / "overload_verdicts.csv"
    verdicts.to_csv(verdicts_csv, index=False)
    overload_table(results).to_csv(csv, index=False)
    section = overload_section(csv, verdicts_csv)
    kinds = [block.kind for block in section.blocks]
    assert kinds.index("sentences") < kinds.index("table")
    answer = section.blocks[kinds.index("sentences")].items
    assert answer[0].startswith("Holds at 2× its capacity (holds 0.9, collapses below 0.5 of capacity")
    assert "collapser (set fresh 0.96)" in answer[0] and "holder (own fresh 0.99, set fresh 1.00)" in answer[0]
    assert answer[1] == "Sheds at 2× its capacity (holds 0.9, collapses below 0.5 of capacity; goodput as its " \
        "share): shedder (set fresh 0.70)."  # fmt: skip
    assert answer[2].startswith("Collapses at 2× its capacity") and "collapser (own fresh 0.07)" in answer[2]
    assert "Never recovered within the window after the burst: collapser (own fresh)." in answer
    shown = next(block for block in section.blocks if block.kind == "table")
    column = shown.columns.index("sent of offered (req/s)")
    sent = {row[0].text: row[column].text for row in shown.rows if row[3].text == "2×"}
    assert sent["shedder"] == "150 of 200 (client-limited)" and sent["holder"] == "200 of 200"
    printed = registry.console_text({}, tmp_path, "overload").splitlines()  # the answer, then a line a server
    assert printed[2 : 2 + len(answer)] == [f"  - {sentence}" for sentence in answer]
    holder = "  holder: goodput of capacity own fresh 2×: 0.99; set fresh 2×: 1.00; own fresh burst: 1.0 s; set fresh"
    assert f"{holder} burst: 1.0 s" in printed


def test_each_release_gets_its_goodput_at_twice_capacity_and_recovery_and_is_judged_on_the_goodput():
    """The lens's checks (``Lens.checks``) reach releases.csv through the registry from a planted
    overload_checks.csv, and release_verdicts.csv judges the newer release, keeping half its
    capacity at 2× where the older kept all of it, lower on goodput (its recovery shown, not judged;
    one that never recovered says so)."""
    from serverbench.lenses.overload.checks import check_table
    from serverbench.lenses.releases.decide import Judged, release_verdicts
    from serverbench.lenses.releases.table import releases_table

    release = {"of": "tiny", "package": "tiny"}
    config = {"catalogue": {f"tiny@{v}": {"release": {**release, "version": v}} for v in ("1.0", "2.0")}}
    results = [
        planted_record("tiny@1.0", {"set": [100, 99, 101, 100, 100]}, {"set": 1.5}),
        planted_record("tiny@2.0", {"set": [50, 49, 51, 50, 50]}, {"set": None}),
    ]
    checks = [c for c in registry.offered_checks(registry.lenses({})) if c.table == "overload_checks.csv"]
    assert [(c.name, c.judged) for c in checks] == [("goodput_at_2x", True), ("recovery_s", False)]
    tables = {
        "overload_checks.csv": check_table(results),
        "overload_verdicts.csv": overload_verdict_table(results, config),
    }
    shown = releases_table(config, {}, checks, tables).set_index(["release", "check"])
    assert shown.loc[("tiny@2.0", "goodput_at_2x"), ["value", "unit", "status"]].tolist() == [0.5, "of capacity", "ok"]
    assert shown.loc[("tiny@1.0", "goodput_at_2x"), "value"] == 1.0
    assert shown.loc[("tiny@1.0", "recovery_s"), ["value", "unit"]].tolist() == [1.5, "s"]
    assert shown.loc[("tiny@2.0", "recovery_s"), "status"] == Status.NOT_MEASURED
    judged = release_verdicts(config, Judged([c for c in checks if c.judged], tables), {"p": ["tiny@1.0", "tiny@2.0"]})
    by_release = judged.set_index(["release", "relation"])
    step = by_release.loc[("tiny@2.0", "previous")]
    assert (step["against"], step["check"], step["outcome"]) == ("tiny@1.0", "goodput_at_2x", "lower")
    assert step["estimate"] == pytest.approx(-0.5)


def test_the_capacity_search_starts_from_what_a_shedding_server_served_not_its_503s(oha, base_config, no_leftovers):
    """A planted server serves 2 requests at a time, 10 ms each, and answers 503 at once beyond them:
    it cannot serve more than 200 a second. The closed loop the capacity search starts from (its
    peak tool, 16 connections for a second) is answered many 503s besides; the rate the lens's
    search starts from (``shed_answers=False``) counts what was served only, the default (advise's,
    recycle's) every answer, as before."""
    from serverbench.cell import loadgen, parsers
    from serverbench.cell.objective import answered_rate

    with planted("shed", 2, 0.01) as url:
        values = {"url": url, "concurrency": 16, "duration": "1", "timeout": "5"}
        argv = loadgen.build_argv(base_config["load_tools"]["oha-fresh-closed"], values)
        parsed = parsers.parse("oha", subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    statuses = parsed["errors_detail"]["status_codes"]
    served, shed = statuses.get(200, 0), statuses.get(503, 0)
    assert served > 0 and shed > served and set(statuses) == {200, 503}
    assert answered_rate(parsed) <= 2 / 0.01 and answered_rate(parsed) < parsed["requests_per_s"]
    assert answered_rate(parsed) == pytest.approx(parsed["requests_per_s"] * served / (served + shed))


# A request that hangs (issue 95's item 5), on a real gunicorn with one sync worker hosting the
# shipped app: each outcome follows from the worker being taken, not from the machine's speed.
@contextlib.contextmanager
def one_sync_worker(*timeout_argv: str):
    """gunicorn, one sync worker, the hello app, on a free port until the block ends."""
    require("gunicorn")
    port = free_port()
    argv = ["gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1", *timeout_argv]
    app = ["--chdir", str(REPO_ROOT / "apps" / "python"), "hello:application"]
    server = subprocess.Popen([*argv, *app], start_new_session=True)
    server_process = psutil.Process(server.pid)
    try:
        wait_listening(port)
        yield port
    finally:
        # Its whole group: a worker it forked meanwhile (the one replacing a killed worker) too,
        # each waited for until gone: an orphaned worker outlives the master until reaped, longer
        # on a busy machine.
        group = [server_process, *server_process.children(recursive=True)]
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        psutil.wait_procs(group, timeout=30)


def test_a_hung_request_is_ended_by_gunicorns_timeout_and_its_worker_freed(no_leftovers):
    with one_sync_worker("--timeout", "2") as port:
        hung = send_hung("127.0.0.1", port, "/hang", 20)  # the app sleeps an hour
        after = send_hung("127.0.0.1", port, "/", 20)
    # The arbiter aborts the silent worker once past 2 s (it looks every second or so), long
    # before the client's 20 s; the abort raises inside the request, which this gunicorn answers
    # with a 500 on the worker's way out.
    assert (hung.outcome, hung.status) == (ANSWERED, 500) and hung.ended_by_server
    assert 2 <= hung.ended_s <= 2 + 5
    assert (after.outcome, after.status) == (ANSWERED, 200)  # a new worker answers


def test_without_a_timeout_the_hung_request_keeps_the_worker_and_the_next_requests_wait(no_leftovers):
    """gunicorn's 30 s default never fires on a 3 s hang: the two requests after it, each given
    1 s by its client, both time out (2 s of the 3); the one after them waits and is answered."""
    with one_sync_worker() as port, socket.create_connection(("127.0.0.1", port)) as hang:
        hang.sendall(b"GET /hang?s=3 HTTP/1.1\r\nHost: x\r\n\r\n")
        waited = [send_hung("127.0.0.1", port, "/", 1) for _ in range(2)]
        after = send_hung("127.0.0.1", port, "/", 20)
        hang.settimeout(20)
        answer = hang.recv(4096)
    assert [r.outcome for r in waited] == [Met.TIMED_OUT, Met.TIMED_OUT]
    assert (after.outcome, after.status) == (ANSWERED, 200)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"Hello World!")


def test_a_servers_own_request_timeout_is_set_by_its_argv_or_its_templates_or_by_nothing(base_config):
    set_gunicorn = with_request_timeout(base_config, "gunicorn", 2)
    assert set_gunicorn["catalogue"]["gunicorn"]["command"][-2:] == ["--timeout", "2"]
    assert with_request_timeout(base_config, "uwsgi", 2)["catalogue"]["uwsgi"]["command"][-2:] == ["--harakiri", "2"]
    unit = with_request_timeout(base_config, "unit-python", 2)["catalogue"]["unit-python"]
    assert unit["template_vars"]["request_timeout_s"] == 2
    assert with_request_timeout(base_config, "starman", 2) is None
    assert with_request_timeout(base_config, "waitress", 2) is None
    assert "--timeout" not in base_config["catalogue"]["gunicorn"]["command"]  # the shipped one untouched


def test_the_hung_request_runs_at_gunicorns_own_timeout_and_the_set_one_into_the_table_and_section(
    base_config, tmp_path, no_leftovers
):
    """The measurement itself on gunicorn with one sync worker, its capacity given (40/s, no
    search): a quarter of 20 requests a second hang. At its own 30 s no hung request is ended
    before the client's 5 s; at 2 s set the first one is (its worker aborted at 2 to 3 s)."""
    require("oha", "gunicorn")
    from serverbench.lenses.overload.hang import hang_runs
    from serverbench.lenses.overload.settings import OverloadSettings
    from serverbench.lenses.overload.table import hang_table
    from serverbench.plan.config import effective_profile
    from serverbench.plan.shapes import Target

    base_config["profiles"]["default"].update(workers=1)
    hang = {"share": 0.25, "multiple": 0.5, "seconds": 2, "hang_s": 3600, "timeout_s": 2}
    plan = OverloadSettings.from_dict({**LENS_PLAN, "clients": ["fresh"], "hang": hang})
    profile = effective_profile(base_config, "default")
    runs = hang_runs(base_config, profile, Target("default", "gunicorn", "hello"), plan, 40, tmp_path / "log")
    own, told = runs
    assert (own.timeout, own.timeout_s, told.timeout, told.timeout_s) == ("default", 30, "set", 2)
    assert own.status == told.status == Status.OK, (own.reason, told.reason)
    assert sum(own.hung.values()) == sum(told.hung.values()) == 10
    assert own.freed == 0 and set(own.hung) == {Met.TIMED_OUT}
    assert told.freed >= 1 and told.hung.get("answered 500", 0) >= 1
    record = {"profile": "default", "server": "gunicorn", "language": "python", "hangs": [asdict(r) for r in runs]}
    table = hang_table([record])
    assert list(table["timeout"]) == ["default", "set"] and list(table["hung"]) == [10, 10]
    csv = tmp_path / "overload_hang.csv"
    table.to_csv(csv, index=False)
    overload_csv = tmp_path / "overload.csv"
    overload_table([{**record, "status": Status.OK, "reason": None, "conditions": []}]).to_csv(overload_csv)
    blocks = overload_section(overload_csv, hang_csv=csv).blocks
    shown = [[cell.text for cell in row[:2]] for row in blocks[-1].rows]
    assert shown == [["gunicorn", "default"], ["gunicorn", "set"]]


def test_the_table_job_writes_all_four_tables_and_the_section_says_the_verdicts_and_the_hangs(tmp_path):
    """Both halves of the lens through its own wiring: planted records with judged stretches and
    hung requests, the table job at its TableJob's outputs, the section through the registry from
    the results directory: overload.csv, overload_checks.csv, overload_verdicts.csv and
    overload_hang.csv written; the answer's sentences first, the hung requests' table last."""
    hangs = [
        {"timeout": "default", "status": Status.OK, "timeout_s": 30, "hung": {Met.TIMED_OUT: 4}, "freed": 0,
         "hung_ended_s": {Met.TIMED_OUT: 2.0}, "rest_goodput_rps": 45, "baseline_goodput_rps": 50},
        {"timeout": "set", "status": Status.OK, "timeout_s": 2, "hung": {"answered 500": 4}, "freed": 4,
         "hung_ended_s": {"answered 500": 2.5}, "rest_goodput_rps": 50, "baseline_goodput_rps": 50},
    ]  # fmt: skip
    record = {**planted_record("holder", {"set": [98, 99, 100, 101, 97]}), "hangs": hangs}
    path = tmp_path / "holder.json"
    path.write_text(json.dumps(record))
    (lens,) = [lens for lens in registry.lenses({}) if lens.name == "overload"]
    outputs = {key: tmp_path / name for key, name in lens.table_job.outputs.items()}
    write_tables({}, [path], outputs)
    assert sorted(name.name for name in outputs.values()) == sorted(lens.tables)
    assert sorted(lens.tables) == ["overload.csv", "overload_checks.csv", "overload_hang.csv", "overload_verdicts.csv"]
    hang = pd.read_csv(outputs["hang"])
    assert hang[["timeout", "hung", "freed", "rest_lost"]].values.tolist() == [["default", 4, 0, 0.1], ["set", 4, 4, 0]]
    (section,) = registry.sections({}, [tmp_path / name for name in lens.tables], {})
    kinds = [block.kind for block in section.blocks]
    answer = section.blocks[kinds.index("sentences")].items
    assert answer[0].startswith("Holds at 2× its capacity") and "holder (set fresh 0.99)" in answer[0]
    counts, hung = [block for block in section.blocks if block.kind == "table"]
    assert kinds.index("sentences") < kinds.index("table") and "overload-hang" in hung.classes
    assert [[cell.text for cell in row[:4]] for row in hung.rows] == [["holder", "default", "30", "4"],
                                                                       ["holder", "set", "2", "4"]]  # fmt: skip
    assert any(row[3].text == "2×" for row in counts.rows)
