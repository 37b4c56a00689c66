"""Does a deploy drop requests? (issue 94): the shutdown lens on planted servers and on gunicorn.

Each count follows from a condition the test creates, not from the machine's speed: a single
worker busy on a request that is answered only once the stop's signal has come (``/hold``)
while N connections wait in its accept queue (waited for by the lens's own sock_diag watcher),
then SIGTERM. A server that drops its queue on TERM (tests/apps/stopping.py drop; gunicorn's
sync worker, gunicorn#3397) loses exactly those N, reset in the accept queue; one that drains
it (stopping.py drain) loses none. A request far longer than the graceful timeout is cut, one
far shorter is answered. Nothing is left running after any stop.
"""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest
from conftest import REPO_ROOT, add_server, require, require_unitd
from serverbench import registry
from serverbench.cell.wire import request
from serverbench.lenses.shutdown.client import Clients
from serverbench.lenses.shutdown.decide import CHECK, shutdown_verdict_table
from serverbench.lenses.shutdown.measure import planned_stops, run_shutdown
from serverbench.lenses.shutdown.settings import ShutdownSettings
from serverbench.lenses.shutdown.table import lost_after, shutdown_table
from serverbench.lenses.shutdown.words import NO_FRONT, NO_REUSE_PORT, Client, Handover, How, Met, Placement
from serverbench.record.vocabulary import Status
from serverbench.report.index import write_index
from serverbench.report.section import section_markdown

STORED = REPO_ROOT / "tests" / "data" / "records-v1"
STOPPING = ["python", "{root}/tests/apps/stopping.py", "{port}"]
PLANTED_STOP = {"graceful": "TERM", "fast": "INT"}
QUEUED = 5
# No closed loop: the requests counted are the ones the test makes queue.
PLAN = {"rounds": 1, "delays": [0], "fast": False, "drain": False, "keepalive": 0, "fresh": 0, "load_s": 0.2,
        "timeout_s": 20, "exit_wait_s": 30, "long_request": None}  # fmt: skip


def queue_behind_a_held_request(count: int):
    """Before the signal: one request the single worker holds until the signal, then ``count``
    connections, each with a request, waiting in the accept queue behind it."""

    def start(watcher) -> list[Clients]:
        host, port = watcher.sockets_address
        hold = Clients(host, port, request("GET", "/hold", headers=[("Host", "x")]), 200, 1, Client.FRESH, watcher,
                       timeout=PLAN["timeout_s"], count=1).start()  # fmt: skip
        assert watcher.wait_for(lambda seen: len(seen.accepted) == 1, 20), "the held request was never accepted"
        queued = Clients(host, port, request("GET", "/", headers=[("Host", "x")]), 200, count, Client.FRESH, watcher,
                         timeout=PLAN["timeout_s"], count=1).start()  # fmt: skip
        assert watcher.wait_for(lambda seen: len(seen.queued) == count, 20), "the connections never queued"
        return [hold, queued]

    return start


def stopped(config: dict, tmp_path, server: str, before=None, **plan) -> dict:
    config["profiles"]["default"]["shutdown"] = {**PLAN, **plan}
    path = tmp_path / f"{server}.json"
    result = run_shutdown(config, "default", server, path, tmp_path / f"{server}.log", before_signal=before)
    assert json.loads(path.read_text()) == result
    assert result["status"] == Status.OK, result["reason"]
    return result


def lost(stop: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for failure in stop["failures"]:
        counts[failure["met"]] = counts.get(failure["met"], 0) + 1
    return counts


def test_a_server_that_drops_its_accept_queue_on_term_is_told_from_one_that_drains_it(
    base_config, tmp_path, no_leftovers
):
    add_server(base_config, "drops", [*STOPPING, "drop"], stop=PLANTED_STOP)
    add_server(base_config, "drains", [*STOPPING, "drain"], stop=PLANTED_STOP)
    found = {name: stopped(base_config, tmp_path, name, queue_behind_a_held_request(QUEUED))["stops"]
             for name in ("drops", "drains")}  # fmt: skip
    (drops,), (drains,) = found["drops"], found["drains"]
    assert (drops["how"], drops["signal"]) == (How.GRACEFUL, "TERM")
    # Exactly the queued requests, every one reset in the accept queue; the held one answered.
    assert lost(drops) == {Met.RESET_IN_QUEUE: QUEUED}
    assert drops["answered"] == {Client.FRESH: {"after": 1}}
    assert lost(drains) == {} and drains["answered"] == {Client.FRESH: {"after": QUEUED + 1}}
    # Each stop timed (not judged on its times: the machine's speed sets them).
    for stop in (drops, drains):
        assert stop["exit_code"] == 0 and not stop["killed"]
        assert all(stop[key] >= 0 for key in ("listener_closed_s", "last_answer_s", "exited_s"))


def test_a_request_longer_than_the_graceful_timeout_is_cut_and_a_shorter_one_answered(
    base_config, tmp_path, no_leftovers
):
    add_server(base_config, "bounded", [*STOPPING, "drop", "--graceful-timeout", "0.5"], stop=PLANTED_STOP)
    add_server(base_config, "patient", [*STOPPING, "drop", "--graceful-timeout", "60"], stop=PLANTED_STOP)
    (cut,) = stopped(base_config, tmp_path, "bounded", long_request={"path": "/slow?s=60", "timeout_s": 90})["stops"]
    (kept,) = stopped(base_config, tmp_path, "patient", long_request={"path": "/slow?s=1", "timeout_s": 90})["stops"]
    assert cut["long_request"]["met"] == Met.RESET_IN_FLIGHT and cut["exit_code"] == 1
    assert cut["exited_s"] >= 0.5 and cut["long_request"]["ended_s"] < 60
    assert kept["long_request"]["met"] == Met.ANSWERED and kept["exit_code"] == 0


def test_gunicorns_sync_worker_drops_the_requests_queued_behind_it_on_term(base_config, tmp_path, no_leftovers):
    """gunicorn#3397, counted: one sync worker busy, N connections queued, TERM."""
    require("gunicorn")
    command = ["gunicorn", "--bind", "{host}:{port}", "--workers", "1", "--chdir", "{root}/tests/apps",
               "holding:application"]  # fmt: skip
    add_server(base_config, "gunicorn-held", command, stop=base_config["catalogue"]["gunicorn"]["stop"])
    (stop,) = stopped(base_config, tmp_path, "gunicorn-held", queue_behind_a_held_request(QUEUED))["stops"]
    assert lost(stop) == {Met.RESET_IN_QUEUE: QUEUED}
    assert stop["answered"] == {Client.FRESH: {"after": 1}} and stop["exit_code"] == 0


def test_a_server_still_routed_to_after_the_signal_loses_nothing_where_it_keeps_accepting_for_as_long(
    base_config, tmp_path, no_leftovers
):
    """The clients send for 1 s after the signal (a balancer still routing): the server that
    stops accepting at once refuses each of the clients' connections (each counted once), the
    one that goes on accepting for three times that long, then drains, loses none."""
    add_server(base_config, "closes", [*STOPPING, "drain"], stop=PLANTED_STOP)
    add_server(base_config, "lingers", [*STOPPING, "drain", "--linger", "3"], stop=PLANTED_STOP)
    routed = {"delays": [1], "fresh": 2}
    (closes,) = stopped(base_config, tmp_path, "closes", **routed)["stops"]
    (lingers,) = stopped(base_config, tmp_path, "lingers", **routed)["stops"]
    assert Counter(one["met"] for one in lost_after(closes))[Met.REFUSED] == 2
    assert lost_after(lingers) == [] and lingers["listener_closed_s"] >= 3


def test_units_drain_stops_accepting_before_its_signal_and_is_judged_against_the_signal_alone(
    base_config, tmp_path, no_leftovers
):
    """unit-python's catalogue declares its own "stop accepting" (its listener, then its
    application, removed through its control API): the drain sends those first and QUIT only
    once the clients' routed second has passed, so each of their connections is refused while
    the server still runs, before the signal; QUIT alone is sent at once. Judged, drain against
    the signal alone at the same delay."""
    require_unitd()
    result = stopped(base_config, tmp_path, "unit-python", delays=[1], fresh=2, drain=True)
    stops = {stop["how"]: stop for stop in result["stops"]}
    assert set(stops) == {How.GRACEFUL, How.DRAIN}
    drain, alone = stops[How.DRAIN], stops[How.GRACEFUL]
    assert (drain["signal"], alone["signal"]) == ("QUIT", "QUIT") and alone["signal_s"] == 0
    assert drain["signal_s"] >= 1 and drain["exited_s"] >= drain["signal_s"] and drain["exit_code"] == 0
    refused_before = {one["connection"] for one in lost_after(drain)
                      if one["met"] == Met.REFUSED and one["ended_s"] < drain["signal_s"]}  # fmt: skip
    assert refused_before == {0, 1}
    (judged,) = [
        row for row in shutdown_verdict_table([result]).to_dict("records") if row["a"].endswith("drain, 1 s routed")
    ]
    assert judged["b"] == "unit-python graceful, 1 s routed"


def test_an_open_loop_keeps_its_schedule_through_the_stop_and_each_refused_request_is_lost(
    base_config, tmp_path, no_leftovers
):
    """Open-loop clients at the closed loop's answered rate (share 1), two senders, routed for
    1 s after TERM to a server that stops accepting at once: every request due in that second
    is sent on its schedule (its sent moment its place in it over the rate) and refused, each
    one lost — not once a sender, as a closed-loop connection retrying is."""
    add_server(base_config, "closes", [*STOPPING, "drain"], stop=PLANTED_STOP)
    plan = {"delays": [1], "fresh": 2, "open_loop": {"share": 1, "senders": 2}}
    (stop,) = stopped(base_config, tmp_path, "closes", **plan)["stops"]
    refused = [one for one in lost_after(stop) if one["client"] == Client.OPEN and one["met"] == Met.REFUSED]
    after = [one for one in stop["failures"] if one["client"] == Client.OPEN and one["ended_s"] >= 0]
    assert stop["open_rate"] > 0 and len(refused) == len(after) > 2  # more than the two senders
    first = refused[0]
    for one in refused:
        expected = first["sent_s"] + (one["connection"] - first["connection"]) / stop["open_rate"]
        assert one["sent_s"] == pytest.approx(expected, abs=1e-3)
    (row,) = shutdown_table([tmp_path / "closes.json"]).to_dict("records")
    assert row["lost_open"] == len(refused) + sum(
        one["client"] == Client.OPEN for one in lost_after(stop) if one["met"] != Met.REFUSED
    )


def test_a_server_that_does_not_stop_is_killed_and_leaves_nothing_running(base_config, tmp_path, no_leftovers):
    add_server(base_config, "stays", [*STOPPING, "ignore"], stop=PLANTED_STOP)
    (stop,) = stopped(base_config, tmp_path, "stays", exit_wait_s=0.5, fresh=1)["stops"]
    assert stop["killed"] and stop["exited_s"] is None and stop["exit_code"] is None
    assert stop["listener_closed_s"] is None  # it listened until the session killed it


def test_each_round_stops_gracefully_at_every_delay_and_fast_at_the_first():
    plan = ShutdownSettings.from_dict({**PLAN, "delays": [0, 1, 5], "fast": True})
    assert planned_stops(plan, has_graceful=True) == [
        (How.GRACEFUL, 0.0), (How.GRACEFUL, 1.0), (How.GRACEFUL, 5.0), (How.FAST, 0.0)]  # fmt: skip
    # Without a graceful stop, the fast one takes the delays (what a deployer is left with).
    assert planned_stops(plan, has_graceful=False) == [(How.FAST, 0.0), (How.FAST, 1.0), (How.FAST, 5.0)]
    # A server with its own "stop accepting" (control requests) is drained at every delay too.
    drained = ShutdownSettings.from_dict({**PLAN, "delays": [0, 1], "drain": True})
    assert planned_stops(drained, has_graceful=True, has_drain=True) == [
        (How.GRACEFUL, 0.0), (How.GRACEFUL, 1.0), (How.DRAIN, 0.0), (How.DRAIN, 1.0)]  # fmt: skip
    assert planned_stops(drained, has_graceful=True, has_drain=False) == [(How.GRACEFUL, 0.0), (How.GRACEFUL, 1.0)]


@pytest.mark.parametrize("server", ["waitress", "uwsgi"])
def test_a_server_without_a_graceful_stop_says_so_in_the_catalogue(base_config, server):
    from serverbench.plan.catalogue import server_entry

    stop = server_entry(base_config, server).stop
    assert stop.graceful is None and stop.fast == "TERM"


def test_the_table_the_verdicts_and_the_section_read_the_stops_as_counted(base_config, tmp_path, no_leftovers):
    """Five stops each way of the dropping server: TERM loses the 5 queued, INT (Python's
    KeyboardInterrupt, no drain) those and the held one; graceful comes out lower by one."""
    add_server(base_config, "drops", [*STOPPING, "drop"], stop=PLANTED_STOP)
    result = stopped(base_config, tmp_path, "drops", queue_behind_a_held_request(QUEUED), rounds=5, fast=True)
    table = shutdown_table([tmp_path / "drops.json"]).set_index("how")
    graceful, fast = table.loc[How.GRACEFUL], table.loc[How.FAST]
    assert (graceful["stops"], graceful["lost_per_stop"], graceful["reset_in_the_accept_queue"]) == (5, 5, 5)
    assert (fast["signal"], fast["lost_per_stop"], fast["reset_in_flight"]) == ("INT", QUEUED + 1, 1)
    assert graceful["lost_before"] == 0 and graceful["exit_codes"] == "0"
    verdicts = shutdown_verdict_table([result])
    (judged,) = verdicts.to_dict("records")
    assert (judged["a"], judged["b"]) == ("drops graceful, 0 s routed", "drops fast, 0 s routed")
    assert judged["outcome"] == "lower" and judged["estimate"] == -1 and judged["n_a"] == 5
    assert (judged["kind"], judged["metric"]) == ("stop", "shutdown")  # the lens's own words
    shutdown_csv, verdicts_csv = tmp_path / "shutdown.csv", tmp_path / "shutdown_verdicts.csv"
    shutdown_table([tmp_path / "drops.json"]).to_csv(shutdown_csv, index=False)
    verdicts.to_csv(verdicts_csv, index=False)
    (section,) = [s for s in registry.sections(base_config, [shutdown_csv, verdicts_csv], {}) if s.lens == "shutdown"]
    answers = section_markdown(section)
    assert answers.startswith("## Does a deploy drop requests?")
    assert "| drops | graceful (TERM), routed 0 s after | 5 | 5.0 |" in answers
    assert "requests lost per stop lower, -1.0 [-1.0, -1.0] a stop" in answers
    sections = registry.sections(base_config, [shutdown_csv, verdicts_csv], {})
    write_index(STORED / "summary.csv", STORED / "verdicts.csv", None, {}, tmp_path / "index.html", sections=sections)
    page = (tmp_path / "index.html").read_text()
    shown = page[page.index('<section id="shutdown">') :]
    assert "<h3>Does a deploy drop requests?</h3>" in shown and '<td data-label="server">drops</td>' in shown
    printed = registry.console_text(base_config, tmp_path, "shutdown")
    assert "drops: fast 0 s: 6 lost; graceful 0 s: 5 lost" in printed


def test_a_connection_refused_again_and_again_loses_one_request_not_one_a_try():
    """The client retries a refused connection at once, at its own pace: each of its
    connections' refusals count once, every try kept apart (refused_attempts)."""
    refused = [{"ended_s": 0.1 * k, "met": Met.REFUSED, "client": Client.FRESH, "connection": k % 2} for k in range(9)]
    before = {"ended_s": -0.1, "met": Met.RESET_IN_FLIGHT, "client": Client.FRESH, "connection": 0}
    queued = {"ended_s": 0.0, "met": Met.RESET_IN_QUEUE, "client": Client.KEEPALIVE, "connection": 0}
    lost = lost_after({"failures": [before, queued, *refused]})
    assert [one["met"] for one in lost] == [Met.RESET_IN_QUEUE, Met.REFUSED, Met.REFUSED]


# Two servers as shutdown.csv holds them: one stopped each way, one whose catalogue declares no stop.
PLANTED_ROWS = [
    {"profile": "p", "server": "drains", "how": "graceful", "signal": "TERM", "delay_s": 1.0, "stops": 5,
     "lost_per_stop": 0.0, "reset_in_the_accept_queue": 0.0, "reset_in_flight": 0.0, "refused": 0.0,
     "keep-alive_closed": 0.0, "timed_out": 0.0, "listener_closed_s": 0.25, "last_answer_s": 0.5, "exited_s": 0.75,
     "exit_codes": "0", "killed": 0, "long_request": None, "status": "ok", "reason": None},
    {"profile": "p", "server": "drains", "how": "fast", "signal": "INT", "delay_s": 0.0, "stops": 5,
     "lost_per_stop": 3.0, "reset_in_the_accept_queue": 2.0, "reset_in_flight": 1.0, "refused": 0.0,
     "keep-alive_closed": 0.0, "timed_out": 0.0, "listener_closed_s": 0.125, "last_answer_s": None, "exited_s": 0.125,
     "exit_codes": "-2", "killed": 2, "long_request": None, "status": "ok", "reason": None},
    {"profile": "p", "server": "silent", "how": None, "signal": None, "delay_s": None, "stops": 0,
     "lost_per_stop": None, "reset_in_the_accept_queue": None, "reset_in_flight": None, "refused": None,
     "keep-alive_closed": None, "timed_out": None, "listener_closed_s": None, "last_answer_s": None, "exited_s": None,
     "exit_codes": None, "killed": 0, "long_request": None, "status": "not_measured", "reason": "no stop declared"},
]  # fmt: skip
PLANTED_VERDICT = {"a": "drains graceful, 1 s routed", "b": "drains fast, 0 s routed", "outcome": "lower",
                   "estimate": -3.0, "ci_low": -3.5, "ci_high": -2.5, "why": None}  # fmt: skip


def test_the_core_writes_the_shutdown_section_from_planted_tables_to_the_page_answers_and_the_console(
    base_config, tmp_path
):
    """The lens gives a typed section only (lens.Section): from a planted shutdown.csv and its
    verdicts the core's three writers put the table and the judged pair on the page and in
    answers.md, and a line per server on the console; a server not measured says why."""
    results = tmp_path / "results"
    results.mkdir()
    pd.DataFrame(PLANTED_ROWS).to_csv(results / "shutdown.csv", index=False)
    pd.DataFrame([PLANTED_VERDICT]).to_csv(results / "shutdown_verdicts.csv", index=False)
    tables = sorted(results.glob("*.csv"))
    page, answers = tmp_path / "index.html", tmp_path / "answers.md"
    sections = registry.sections(base_config, tables, {})
    write_index(STORED / "summary.csv", STORED / "verdicts.csv", None, {}, page,
                answers_path=answers, sections=sections)  # fmt: skip
    judged = (
        "drains graceful, 1 s routed against drains fast, 0 s routed: "
        "requests lost per stop lower, -3.0 [-3.5, -2.5] a stop."
    )
    shown = page.read_text()[page.read_text().index('<section id="shutdown">') :]
    assert "<h3>Does a deploy drop requests?</h3>" in shown and f"<li>{judged}</li>" in shown
    assert '<td data-label="notes">killed after the lens&#39;s wait in 2 of 5</td>' in shown  # escaped
    assert '<td data-label="notes">not_measured: no stop declared</td>' in shown
    counts = ["reset in the accept queue", "reset in flight", "refused", "keep-alive closed", "timed out"]
    seconds = ["listener closed (s)", "last answer (s)", "exited (s)"]
    rows = [
        ["server", "stop", "requests lost per stop", *counts, *seconds, "exit code", "notes"],
        ["---"] * 13,
        ["drains", "graceful (TERM), routed 1 s after", "0", *["0.0"] * 5, "0.250", "0.500", "0.750", "0", ""],
        ["drains", "fast (INT), routed 0 s after", "3", "2.0", "1.0", *["0.0"] * 3, "0.125", "", "0.125", "-2",
         "killed after the lens's wait in 2 of 5"],
        ["silent", *[""] * 11, "not_measured: no stop declared"],
    ]  # fmt: skip
    table = "\n".join("| " + " | ".join(cells) + " |" for cells in rows)
    assert "## Does a deploy drop requests?\n\nEach server stopped under load" in answers.read_text()
    assert f"a stop.\n\n{table}\n" in answers.read_text()
    printed = registry.console_text(base_config, results, "shutdown")
    assert printed == (
        "\nDoes a deploy drop requests? (shutdown.csv)\n"
        "  drains: graceful 1 s: 0 lost; fast 0 s: 3 lost\n"
        "  silent: not_measured\n"
    )


def planted_release(name: str, lost_per_stop: int, rounds: int = 5) -> dict:
    """A release's record as the lens writes it: ``rounds`` graceful stops with no delay, each
    losing ``lost_per_stop`` requests reset in the accept queue, exiting 0.25 s after the signal."""
    lost = [{"sent_s": -0.1, "ended_s": 0.0, "met": Met.RESET_IN_QUEUE, "client": Client.FRESH, "connection": k}
            for k in range(lost_per_stop)]  # fmt: skip
    stop = {"how": How.GRACEFUL, "signal": "TERM", "delay_s": 0.0, "status": Status.OK, "reason": None,
            "exited_s": 0.25, "failures": lost}  # fmt: skip
    return {"profile": "p", "server": name, "language": "python", "status": Status.OK, "reason": None,
            "stops": [{**stop, "round": k} for k in range(rounds)]}  # fmt: skip


def test_each_release_gets_its_lost_per_stop_and_seconds_to_exit_and_is_judged_on_the_lost():
    """The lens's checks (``Lens.checks``) reach releases.csv through the registry from a planted
    shutdown_checks.csv, and release_verdicts.csv judges the newer release, losing 3 requests a
    stop where the older lost none, higher on lost per stop (its seconds to exit shown, not judged)."""
    from serverbench.lenses.releases.decide import Judged, release_verdicts
    from serverbench.lenses.releases.table import releases_table
    from serverbench.lenses.shutdown.checks import check_table

    release = {"of": "tiny", "package": "tiny"}
    config = {"catalogue": {f"tiny@{v}": {"release": {**release, "version": v}} for v in ("1.0", "2.0")}}
    results = [planted_release("tiny@1.0", 0), planted_release("tiny@2.0", 3)]
    checks = [c for c in registry.offered_checks(registry.lenses({})) if c.table == "shutdown_checks.csv"]
    assert [(c.name, c.judged) for c in checks] == [("lost_per_stop", True), ("stop_s", False)]
    tables = {
        "shutdown_checks.csv": check_table(results),
        "shutdown_verdicts.csv": shutdown_verdict_table(results, config),
    }
    shown = releases_table(config, {}, checks, tables).set_index(["release", "check"])
    newer = shown.loc[("tiny@2.0", "lost_per_stop"), ["value", "unit", "status"]]
    assert newer.tolist() == [3, "requests per stop", "ok"]
    assert shown.loc[("tiny@1.0", "lost_per_stop"), "value"] == 0
    assert shown.loc[("tiny@2.0", "stop_s"), ["value", "unit"]].tolist() == [0.25, "s"]
    judged = release_verdicts(config, Judged([c for c in checks if c.judged], tables), {"p": ["tiny@1.0", "tiny@2.0"]})
    by_release = judged.set_index(["release", "relation"])
    step = by_release.loc[("tiny@2.0", "previous")]
    assert (step["against"], step["check"], step["outcome"], step["estimate"]) == ("tiny@1.0", CHECK, "higher", 3)
    # Against its baseline (the newest) the older release reads the change turned round.
    assert by_release.loc[("tiny@1.0", "baseline"), ["outcome", "estimate"]].tolist() == ["lower", -3]


HELD_GUNICORN = ["gunicorn", "--workers", "1", "--chdir", "{root}/tests/apps", "holding:application"]


def test_a_replacement_through_reuse_port_loses_exactly_what_the_stop_alone_loses(base_config, tmp_path, no_leftovers):
    """gunicorn's sync worker, one, started with --reuse-port (the catalogue's stop.reuse_port),
    held on a request with N connections queued behind it; a second instance then started on the
    same port, waited for as a second listener, and the first TERMed: the N were in the first's
    own accept queue, which the second does not take over (tcp_migrate_req off: the kernel's
    default), so the replacement loses exactly the N the stop alone loses, reset in the queue."""
    require("gunicorn")
    stop = base_config["catalogue"]["gunicorn"]["stop"]
    assert stop["reuse_port"] == ["--reuse-port"]
    add_server(base_config, "gunicorn-held", [*HELD_GUNICORN, "--bind", "{host}:{port}"], stop=stop)
    result = stopped(base_config, tmp_path, "gunicorn-held", queue_behind_a_held_request(QUEUED),
                     replace=["reuse_port"], handover_delay_s=0)  # fmt: skip
    alone, replaced = result["stops"]
    assert (alone["handover"], replaced["handover"]) == (Handover.NONE, Handover.REUSE_PORT)
    for stop in (alone, replaced):
        assert lost(stop) == {Met.RESET_IN_QUEUE: QUEUED}
        assert stop["answered"] == {Client.FRESH: {"after": 1}} and stop["exit_code"] == 0
    # The replacement started two masters (gunicorn 27 with --reuse-port names no address: its
    # workers bind), the stop alone one.
    log = (tmp_path / "gunicorn-held.log").read_text()
    alone_log, replaced_log = log.split(f"handed over: {Handover.REUSE_PORT}")
    masters = [line.rsplit("(", 1)[1] for line in replaced_log.splitlines() if "Listening at:" in line]
    assert alone_log.count("Listening at:") == 1 and len(set(masters)) == len(masters) == 2
    (judged,) = [row for row in shutdown_verdict_table([result]).to_dict("records") if row["kind"] == "replacement"]
    assert judged["b"] == "gunicorn-held graceful, 0 s routed"


def test_behind_the_front_a_second_upstream_takes_what_the_stopped_one_refuses_where_the_front_retries(
    base_config, tmp_path, no_leftovers
):
    """gunicorn (one sync worker) behind nginx with a second instance as a second upstream; one
    client sends a request at a time for 2 s after TERM. The first closes its socket at TERM:
    with the front's proxy_next_upstream error timeout each request it routes there is retried
    on the second, none lost; with off the first such request meets a 502, then the front takes
    the first for down (max_fails 1) and routes every other to the second: exactly one lost."""
    require("gunicorn", "nginx")
    from serverbench.plan.fronts import expand_fronts

    behind = {"protocol": "http", "command": [*HELD_GUNICORN, "--bind", "unix:{rundir}/backend.sock"]}
    add_server(base_config, "gunicorn-held", [*HELD_GUNICORN, "--bind", "{host}:{port}"],
               stop=base_config["catalogue"]["gunicorn"]["stop"], behind=behind)  # fmt: skip
    expand_fronts(base_config)
    result = stopped(base_config, tmp_path, "gunicorn-held", fresh=1, replace=["front"], handover_delay_s=2,
                     delays=[2])  # fmt: skip
    stops = {stop["handover"]: stop for stop in result["stops"]}
    retried, refused = stops[Handover.UPSTREAM_RETRY], stops[Handover.UPSTREAM_NO_RETRY]
    assert {stop["placement"] for stop in (retried, refused)} == {Placement.FRONTED}
    assert lost(retried) == {} and lost(refused) == {Met.BAD_STATUS: 1}
    for stop in (retried, refused):  # the second answered on after the first had gone
        assert stop["answered"][Client.FRESH]["after"] > 1 and stop["exit_code"] == 0 and not stop["killed"]
    (judged,) = [row for row in shutdown_verdict_table([result]).to_dict("records") if row["kind"] == "upstream retry"]
    assert judged["a"] == "gunicorn-held graceful, 2 s routed, replaced as a second upstream, retried"


def test_a_server_with_no_way_to_be_replaced_or_fronted_says_why_in_a_row(base_config, tmp_path, no_leftovers):
    add_server(base_config, "alone", [*STOPPING, "drain"], stop=PLANTED_STOP)
    result = stopped(base_config, tmp_path, "alone", fronted=True, replace=["reuse_port", "front"],
                     handover_delay_s=0)  # fmt: skip
    rows = shutdown_table([tmp_path / "alone.json"]).set_index(["placement", "handover"])
    assert rows.loc[(Placement.BARE, Handover.NONE), "status"] == Status.OK
    assert rows.loc[(Placement.BARE, Handover.REUSE_PORT), "reason"] == NO_REUSE_PORT
    for handover in (Handover.NONE, Handover.UPSTREAM_RETRY, Handover.UPSTREAM_NO_RETRY):
        assert rows.loc[(Placement.FRONTED, handover), ["status", "reason"]].tolist() == [Status.NOT_MEASURED, NO_FRONT]
    assert len(result["stops"]) == 5  # the bare stop, and each way it could not be stopped once


def test_the_section_answers_each_handover_question_in_a_sentence_on_the_page_in_answers_and_on_the_console(
    base_config, tmp_path
):
    """Planted rows of a server stopped bare and behind the front, and its verdict of kind
    ``fronted stop``: the page, answers.md and the console each say the answer across the
    servers in one sentence, and the page's table shows the front's 502s."""
    base = {"profile": "p", "server": "drops", "how": "graceful", "signal": "TERM", "delay_s": 1.0, "stops": 5,
            "status": "ok", "reason": None, "killed": 0, "exit_codes": "0", "handover": "none"}  # fmt: skip
    rows = [{**base, "placement": "bare", "lost_per_stop": 8.0, "bad_status": 0.0},
            {**base, "placement": "fronted", "lost_per_stop": 4.0, "bad_status": 4.0}]  # fmt: skip
    verdict = {"server": "drops", "kind": "fronted stop", "a": "drops graceful, 1 s routed, behind the front",
               "b": "drops graceful, 1 s routed", "outcome": "lower", "estimate": -4.0, "ci_low": -4.5,
               "ci_high": -3.5, "why": None}  # fmt: skip
    results = tmp_path / "results"
    results.mkdir()
    pd.DataFrame(rows).to_csv(results / "shutdown.csv", index=False)
    pd.DataFrame([verdict]).to_csv(results / "shutdown_verdicts.csv", index=False)
    sections = registry.sections(base_config, sorted(results.glob("*.csv")), {})
    page, answers = tmp_path / "index.html", tmp_path / "answers.md"
    write_index(STORED / "summary.csv", STORED / "verdicts.csv", None, {}, page,
                answers_path=answers, sections=sections)  # fmt: skip
    said = "Stopped behind the nginx front against bare, requests lost per stop: drops lower (-4.0)."
    shown = page.read_text()[page.read_text().index('<section id="shutdown">') :]
    assert f"<li>{said}</li>" in shown and '<td data-label="bad status">4.0</td>' in shown
    assert f"- {said}" in answers.read_text()
    assert "| drops | graceful (TERM), routed 1 s after, behind the front | 4 | 4.0 |" in answers.read_text()
    printed = registry.console_text(base_config, results, "shutdown")
    assert f"  {said}\n" in printed and "graceful 1 s, behind the front: 4 lost" in printed
