"""Which balancer idle timeout is safe? (issue 96, item 2): the balancer's idle pool as a client
kind (lenses/idlepool/pool.py) on planted servers and on gunicorn.

Each count follows from a condition the test creates: a server that closes an idle connection
the moment a request arrives after its keep-alive (tests/apps/idle_closing.py arrival: the
race's reset made certain, not hoped for by timing a send against a timer) resets every reuse
at or past that idle time and none well below it; one whose threads each hold a connection for
the whole keep-alive starves a fresh client exactly when as many idle connections as it has
threads are held. Where a server's own idle timer must have fired (gunicorn, timer mode), the
reuse waits several times its keep-alive. Nothing is left running.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections import Counter

import pandas as pd
import pytest
from conftest import REPO_ROOT, require
from serverbench.cell.wire import request
from serverbench.lens import Medium
from serverbench.lenses.idlepool.pool import (
    Fresh,
    Pool,
    Reuse,
    fresh_client_beside,
    idle_times,
    race_window,
    reuse_after,
    safe_idle_timeout,
)
from serverbench.lenses.idlepool.sweep import DEFAULT, RAISED, cost, idle_pool_section, sweep, verdicts

IDLE_CLOSING = REPO_ROOT / "tests" / "apps" / "idle_closing.py"
GET = request("GET", "/", headers=[("Host", "x")])
POOLED = 4  # idle connections in the balancer's pool
READY_TIMEOUT_S = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(argv_of):
    """A server from ``argv_of(port)``, once it accepts connections; ended after, whatever happens."""
    port = free_port()
    process = subprocess.Popen(argv_of(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            assert process.poll() is None, f"{argv_of(port)} exited {process.returncode}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.05)
        yield Pool("127.0.0.1", port, GET, timeout_s=10)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def idle_closing(threads: int, keepalive_s: float, mode: str):
    return lambda port: [sys.executable, str(IDLE_CLOSING), str(port), str(threads), str(keepalive_s), mode]


def test_reuses_fail_at_the_servers_keepalive_and_not_well_below_it(no_leftovers):
    with serving(idle_closing(POOLED, 1.0, "arrival")) as pool:
        swept = {idle: reuse_after(pool, idle, POOLED) for idle in idle_times(1.0, (0.25, 1.1, 1.5))}
    assert swept == {
        0.25: Counter({Reuse.ANSWERED: POOLED}),
        1.1: Counter({Reuse.RESET: POOLED}),
        1.5: Counter({Reuse.RESET: POOLED}),
    }
    assert race_window(swept) == [1.1, 1.5]
    assert safe_idle_timeout(swept) == 0.25


def test_raising_the_servers_keepalive_closes_the_window(no_leftovers):
    with serving(idle_closing(POOLED, 10.0, "arrival")) as pool:
        swept = {idle: reuse_after(pool, idle, POOLED) for idle in (0.25, 1.1, 1.5)}
    assert all(counts == Counter({Reuse.ANSWERED: POOLED}) for counts in swept.values())
    assert race_window(swept) == []
    assert safe_idle_timeout(swept) == 1.5


def test_a_connection_closed_by_the_servers_timer_is_seen_before_the_send(no_leftovers):
    """Past a timer's close the FIN is there before the balancer sends: retried, not failed."""
    with serving(idle_closing(POOLED, 0.5, "timer")) as pool:
        swept = {0.1: reuse_after(pool, 0.1, POOLED), 3.0: reuse_after(pool, 3.0, POOLED)}
    assert swept == {0.1: Counter({Reuse.ANSWERED: POOLED}), 3.0: Counter({Reuse.CLOSED_BEFORE_SEND: POOLED})}
    assert race_window(swept) == []


@pytest.mark.parametrize("pre_opened", [False, True], ids=["pooled", "pre-opened"])
def test_a_fresh_client_is_starved_exactly_when_every_thread_holds_an_idle_connection(pre_opened, no_leftovers):
    threads = 2
    with serving(idle_closing(threads, 60.0, "timer")) as pool:
        fewer = fresh_client_beside(pool, threads - 1, wait_s=10, pre_opened=pre_opened)
        as_many = fresh_client_beside(pool, threads, wait_s=1, pre_opened=pre_opened)
    assert fewer.got is Fresh.ANSWERED and fewer.wait_s < 10
    assert as_many.got is Fresh.STARVED and as_many.wait_s >= 1


def gunicorn(*options: str):
    return lambda port: ["gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1", *options,
                         "--chdir", str(REPO_ROOT / "apps" / "python"), "hello:application"]  # fmt: skip


def test_gunicorn_sync_never_keeps_a_connection_and_its_pre_opened_ones_starve_it(no_leftovers):
    """gunicorn's sync worker answers `Connection: close` (no reuse to lose, whatever its
    --keep-alive), and one pre-opened connection holds its only worker (gunicorn#1296)."""
    require("gunicorn")
    with serving(gunicorn("--keep-alive", "2")) as pool:
        assert reuse_after(pool, 0.1, POOLED) == Counter({Reuse.NOT_KEPT: POOLED})
        alone = fresh_client_beside(pool, 0, wait_s=10, pre_opened=True)
        beside = fresh_client_beside(pool, 1, wait_s=1, pre_opened=True)
    assert alone.got is Fresh.ANSWERED
    assert beside.got is Fresh.STARVED


def test_gunicorn_gthread_closes_an_idle_connection_at_its_keepalive(no_leftovers):
    require("gunicorn")
    with serving(gunicorn("--worker-class", "gthread", "--threads", str(POOLED), "--keep-alive", "1")) as pool:
        below = reuse_after(pool, 0.2, POOLED)
        past = reuse_after(pool, 4.0, POOLED)
    assert below == Counter({Reuse.ANSWERED: POOLED})
    assert past == Counter({Reuse.CLOSED_BEFORE_SEND: POOLED})


def test_the_sweep_says_which_balancer_idle_timeout_is_safe_and_that_raising_the_keepalive_closes_it(no_leftovers):
    factors = (0.25, 1.1, 1.5)
    with serving(idle_closing(POOLED, 1.0, "arrival")) as pool:
        rows = sweep(pool, "planted", "bare", DEFAULT, 1.0, POOLED, factors)
    with serving(idle_closing(POOLED, 10.0, "arrival")) as pool:
        # the raised keep-alive swept at the default one's idle times
        rows += [{**row, "keepalive_s": 10.0} for row in sweep(pool, "planted", "bare", RAISED, 1.0, POOLED, factors)]
        costs = pd.DataFrame(cost(pool, "planted", "bare", holds=POOLED, wait_s=1, pre_opened=False))
    sweeps = pd.DataFrame(rows)
    assert sweeps[str(Reuse.RESET)].tolist() == [0, POOLED, POOLED, 0, 0, 0]
    assert costs["fresh"].tolist() == [str(Fresh.ANSWERED), str(Fresh.STARVED)]
    judged = verdicts(sweeps, costs).iloc[0].to_dict()
    assert judged == {"server": "planted", "deployment": "bare", "keepalive_s": 1.0, "race_window_s": "1.1 1.5",
                      "safe_idle_timeout_s": 0.25, "raised_keepalive_s": 10.0, "raised_closes_window": True,
                      "starved_beside": POOLED}  # fmt: skip
    section = idle_pool_section(sweeps, costs)
    assert section.title == "Which balancer idle timeout is safe?"
    assert section.blocks[1].items == (
        "planted (bare): reuses fail at idle 1.1 1.5 s against its 1 s keep-alive; a balancer idle timeout is safe "
        "up to 0.25 s; raising its keep-alive to 10 s closes the window; 4 idle connections starve a fresh client.",
    )
    assert section.blocks[2].columns == ("server", "deployment", "keepalive", "keepalive_s", "idle_s", "answered",
                                         "reset")  # fmt: skip


NGINX_CONF = """pid {rundir}/nginx.pid;
error_log {rundir}/error.log warn;
daemon off;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {rundir}/body;
    proxy_temp_path {rundir}/proxy;
    fastcgi_temp_path {rundir}/fastcgi;
    uwsgi_temp_path {rundir}/uwsgi;
    scgi_temp_path {rundir}/scgi;
    keepalive_timeout 75s;
    upstream app {{
        server 127.0.0.1:{upstream};
        keepalive 32;
        keepalive_timeout 60s;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


def nginx_before(upstream: int, rundir):
    """nginx as config.yaml's front keeps its upstream pool (`keepalive`, its 60 s idle timeout
    above the server's), on TCP to the planted server."""

    def argv_of(port: int) -> list[str]:
        conf = rundir / "nginx.conf"
        conf.write_text(NGINX_CONF.format(rundir=rundir, upstream=upstream, port=port))
        return ["nginx", "-p", str(rundir), "-c", str(conf)]

    return argv_of


def test_nginx_retries_a_get_on_a_pooled_connection_the_server_reset_but_not_a_post(tmp_path, no_leftovers):
    """Past the server's keep-alive, nginx's own pooled upstream connection is reset under the
    request: it retries a GET on a new connection (answered), not a POST (its 502). nginx's
    upstream pool is last in, first out, and the client's first requests come one after another:
    they all went over one upstream connection, the only one pooled, so exactly one reuse meets
    it idle past the server's keep-alive; the others find the pool empty and connect afresh."""
    require("nginx")
    with serving(idle_closing(POOLED, 1.0, "arrival")) as server, serving(nginx_before(server.port, tmp_path)) as front:
        get = reuse_after(front, 3.0, POOLED)
        post = Pool(front.host, front.port, request("POST", "/", headers=[("Host", "x"), ("Content-Length", "0")]))
        posted = reuse_after(post, 3.0, POOLED)
    assert get == Counter({Reuse.ANSWERED: POOLED})
    assert posted == Counter({Reuse.BAD_STATUS: 1, Reuse.ANSWERED: POOLED - 1})


def idlepool_config(**catalogue_changes) -> dict:
    """The shipped idlepool profile on gunicorn-gthread alone, a tiny sweep around a 1 s keep-alive
    (its command's and its catalogue fact's), on the machine's two CPUs."""
    from serverbench.plan import config as cfg

    config = cfg.load(REPO_ROOT / "config.yaml", {"profile": "idlepool", "servers": ["gunicorn-gthread"]})
    profile = config["profiles"]["idlepool"]
    profile.update(server_cpus=[0], client_cpus=[1], time_wait_max=10**6, threads=POOLED)
    profile["idle_pool"] = {**profile["idle_pool"], "factors": [0.25, 3.0], "connections": 5, "fresh_wait_s": 1}
    entry = config["catalogue"]["gunicorn-gthread"]
    entry["command"] = [("1" if part == "5" else part) for part in entry["command"]]  # its --keep-alive 5
    entry["keepalive"] = {**entry["keepalive"], "default_s": 1, **catalogue_changes}
    return cfg.validate(config)


def test_the_profiles_job_sweeps_a_server_bare_and_raised_and_its_tables_answer(tmp_path, no_leftovers):
    """run_idle_pool end to end on gunicorn-gthread: past its 1 s keep-alive its timer has closed
    every pooled connection before the reuse (seen, retried: no failure), at 4 × it every reuse is
    answered; the table job judges every idle time equivalent to the shortest, so the whole sweep
    is safe, and writes a fresh client's lot beside the held idle connections."""
    require("gunicorn")
    from serverbench.lenses.idlepool.decide import write_tables
    from serverbench.lenses.idlepool.measure import run_idle_pool

    config = idlepool_config()
    record = run_idle_pool(config, "idlepool", "gunicorn-gthread", tmp_path / "g.json", tmp_path / "logs" / "g.log")
    assert [(d["keepalive"], d["keepalive_s"], d["status"]) for d in record["deployments"]] == [
        (DEFAULT, 1.0, "ok"),
        (RAISED, 4.0, "ok"),
    ]
    reuses = {(row["keepalive"], row["idle_s"]): row for row in record["sweeps"]}
    assert reuses[(DEFAULT, 0.25)][str(Reuse.ANSWERED)] == 5
    assert reuses[(DEFAULT, 3.0)][str(Reuse.CLOSED_BEFORE_SEND)] == 5
    assert reuses[(RAISED, 3.0)][str(Reuse.ANSWERED)] == 5
    outputs = {name: tmp_path / f"{name}.csv" for name in ("table", "costs", "verdicts", "answers", "checks")}
    write_tables(config, [tmp_path / "g.json"], outputs)
    answer = pd.read_csv(outputs["answers"]).iloc[0]
    assert (answer["server"], answer["keepalive_s"], answer["safe_idle_timeout_s"]) == ("gunicorn-gthread", 1.0, 3.0)
    assert pd.isna(answer["race_window_s"])
    # Its timer closed them first, at 3 s and not at 0.25 s: said, not counted as a failure.
    assert (answer["closed_first_s"], answer["never_kept"]) == (3.0, False)
    verdicts = pd.read_csv(outputs["verdicts"])
    assert set(verdicts["outcome"]) == {"equivalent"} and set(verdicts["metric"]) == {"failed reuses"}
    costs = pd.read_csv(outputs["costs"])
    assert sorted(costs["held"]) == [7, 7, 8, 8]  # 2 workers × 4 threads, and one fewer; pooled and pre-opened
    offered = pd.read_csv(outputs["checks"]).set_index("check")  # at 0.25 s, the one idle time below 1 s
    assert offered.loc[["failed_reuses", "answered_reuses"], ["idle_s", "value", "n"]].values.tolist() == [
        [0.25, 0.0, 5],
        [0.25, 1.0, 5],
    ]


def test_a_servers_keepalive_fact_stays_out_of_its_cells_conditions_digest():
    from serverbench.plan.matrix import Matrix

    def digest(config):
        return Matrix(config).conditions("idlepool", "wrk", "gunicorn-gthread", "hello")

    assert digest(idlepool_config()) == digest(idlepool_config(default_s=7, setting="keepalive"))


# ---- the tables' answer, from planted records (no server) --------------------------------


def planted_sweep(server: str, deployment: str, keepalive: str, keepalive_s: float, failed_from: float | None,
                  idle_times_s=(0.25, 0.5, 1.1, 1.5), reused: int = 6) -> list[dict]:  # fmt: skip
    """A sweep's rows: every reuse answered below ``failed_from`` and reset at or past it (None: never)."""
    rows = []
    for idle_s in idle_times_s:
        failing = failed_from is not None and idle_s >= failed_from
        counts = {str(outcome): 0 for outcome in Reuse} | {str(Reuse.RESET if failing else Reuse.ANSWERED): reused}
        rows.append({"server": server, "deployment": deployment, "keepalive": keepalive,
                     "keepalive_s": keepalive_s, "idle_s": idle_s, **counts})  # fmt: skip
    return rows


def planted_record(server: str, sweeps: list[dict]) -> dict:
    deployments = {(row["deployment"], row["keepalive"], row["keepalive_s"]) for row in sweeps}
    return {
        "profile": "p", "server": server, "language": "python", "keepalive_setting": "--keep-alive",
        "sweeps": sweeps, "status": "ok", "reason": None,
        "costs": [{"server": server, "deployment": server, "held": held, "pre_opened": False, "fresh": fresh,
                   "wait_s": 0.01} for held, fresh in ((1, "answered"), (2, "starved"))],
        "deployments": [{"name": name, "keepalive": setting, "keepalive_s": seconds, "status": "ok", "reason": None}
                        for name, setting, seconds in sorted(deployments)],
    }  # fmt: skip


def test_the_section_opens_with_each_servers_answer_on_every_medium(tmp_path):
    """A planted server whose reuses fail past its 1 s keep-alive bare, at none of the idle times
    raised, and at none behind nginx: its answer names the safe idle timeout, the window, that
    raising closes it and that the front removes the race, first on the page, answers.md and the
    console; a server not swept says why."""
    from serverbench.lenses.idlepool.decide import write_tables
    from serverbench.lenses.idlepool.report import idle_pool_section
    from serverbench.report.section import section_console, section_markdown

    sweeps = planted_sweep("planted", "planted", DEFAULT, 1.0, failed_from=1.1)
    sweeps += planted_sweep("planted", "planted", RAISED, 4.0, failed_from=None)
    sweeps += planted_sweep("planted", "planted+nginx", DEFAULT, 1.0, failed_from=None)
    silent = {**planted_record("silent", []), "deployments": [], "costs": [], "status": "skipped",
              "reason": "silent declares no keep-alive timeout"}  # fmt: skip
    for name, record in (("planted", planted_record("planted", sweeps)), ("silent", silent)):
        (tmp_path / f"{name}.json").write_text(json.dumps(record))
    outputs = {name: tmp_path / f"{name}.csv" for name in ("table", "costs", "verdicts", "answers", "checks")}
    write_tables({"profiles": {"p": {"idle_pool": {}}}, "catalogue": {}}, sorted(tmp_path.glob("*.json")), outputs)
    section = idle_pool_section(outputs["answers"])
    said = (
        "planted: a balancer idle timeout up to 0.5 s is safe at its 1 s keep-alive (--keep-alive); reuses failed "
        "at idle 1.1 1.5 s (the race window); raising it to 4 s closes the window; behind nginx no reuse failed: "
        "the front removes the race; 2 idle connections starve a fresh client.",
        "silent: not swept (silent declares no keep-alive timeout).",
    )
    opening = [block for block in section.blocks if Medium.PAGE in block.media][0]
    assert opening.items == said
    assert section_markdown(section).startswith(f"## {section.title}\n\n- {said[0]}\n- {said[1]}\n\n")
    assert section_console(section) == f"\n{section.title} (idle_pool_answers.csv)\n  - {said[0]}\n  - {said[1]}\n"
    table = section.blocks[-1]
    assert [row[6].text for row in table.rows] == ["–", "yes", "–"]


def test_a_release_that_shortens_its_default_keepalive_is_judged_on_its_failed_reuses(tmp_path):
    """The lens's checks (``Lens.checks``) reach releases.csv through the registry from planted
    records of two releases swept around the 5 s keep-alive their catalogue entry declares: the
    older one's own default is 2 s (gunicorn's before it moved to 5 s), so at the check's idle
    time, 4.5 s (the longest below 5 s), its every reuse fails where the newer's are answered;
    release_verdicts.csv judges the newer lower on failed reuses against the one before it."""
    from serverbench import registry
    from serverbench.lenses.idlepool.decide import write_tables
    from serverbench.lenses.releases.decide import Judged, release_verdicts
    from serverbench.lenses.releases.table import releases_table

    idle = (1.25, 2.5, 4.5, 5.5)
    older = planted_record("tiny@1.0", planted_sweep("tiny@1.0", "tiny@1.0", DEFAULT, 5.0, 2.5, idle))
    newer = planted_record("tiny@2.0", planted_sweep("tiny@2.0", "tiny@2.0", DEFAULT, 5.0, 5.5, idle))
    release = {"of": "tiny", "package": "tiny"}
    config = {"profiles": {"p": {"idle_pool": {}}},
              "catalogue": {f"tiny@{v}": {"release": {**release, "version": v}} for v in ("1.0", "2.0")}}  # fmt: skip
    for record in (older, newer):
        (tmp_path / f"{record['server']}.json").write_text(json.dumps(record))
    outputs = {name: tmp_path / f"{name}.csv" for name in ("table", "costs", "verdicts", "answers", "checks")}
    write_tables(config, sorted(tmp_path.glob("*.json")), outputs)
    checks = [c for c in registry.offered_checks(registry.lenses({})) if c.table == "idle_pool_checks.csv"]
    assert [(c.name, c.judged) for c in checks] == [("failed_reuses", True), ("answered_reuses", False)]
    tables = {"idle_pool_checks.csv": pd.read_csv(outputs["checks"]),
              "idle_pool_verdicts.csv": pd.read_csv(outputs["verdicts"])}  # fmt: skip
    shown = releases_table(config, {}, checks, tables).set_index(["release", "check"])
    assert shown.loc[("tiny@1.0", "failed_reuses"), ["value", "unit", "status"]].tolist() == [
        1.0,
        "share of reuses failed",
        "ok",
    ]
    assert shown.loc[("tiny@2.0", "failed_reuses"), "value"] == 0
    assert shown.loc[("tiny@2.0", "answered_reuses"), "value"] == 1
    judged = release_verdicts(config, Judged([c for c in checks if c.judged], tables), {"p": ["tiny@1.0", "tiny@2.0"]})
    step = judged.set_index(["release", "relation"]).loc[("tiny@2.0", "previous")]
    assert (step["against"], step["check"], step["outcome"], step["estimate"]) == ("tiny@1.0", "failed_reuses",
                                                                                   "lower", -1)  # fmt: skip


def test_the_deployed_file_says_the_keepalive_to_set_for_a_balancers_idle_timeout(tmp_path):
    """advise's deployed files carry the rule in the catalogue's terms: gunicorn's (2 s by default,
    --keep-alive, its note that the sync worker keeps none) and uWSGI's (--socket-timeout) keep-alive
    set above an ALB's 60 s idle timeout, 65."""
    from serverbench import REPO_ROOT as ROOT
    from serverbench.lenses.advise.deploy import write_configurations
    from serverbench.plan import config as cfg

    config = cfg.validate(cfg.load(ROOT / "config.yaml", {"profile": "advise"}))
    row = {"profile": "advise", "workers": 2, "threads": 1, "capacity_rps": 100.0, "objective_p99_ms": 50,
           "cpus": 1, "memory_mb": 20.0}  # fmt: skip
    write_configurations(
        config, pd.DataFrame([{**row, "server": s, "model": s} for s in ("gunicorn", "uwsgi")]), tmp_path
    )
    gunicorn = (tmp_path / "gunicorn" / "gunicorn.conf.py").read_text()
    assert (
        "# Keep-alive: 2 s by default (--keep-alive). Behind a balancer that pools connections, set --keep-alive "
        "above the balancer's idle timeout: its idle timeout + 5 s (an AWS ALB's 60 s: --keep-alive 65).\n"
    ) in gunicorn
    assert "# (the sync worker answers Connection: close" in gunicorn
    uwsgi = (tmp_path / "uwsgi" / "uwsgi.ini").read_text()
    assert "; Keep-alive: 4 s by default (--socket-timeout)." in uwsgi and "--socket-timeout 65).\n" in uwsgi


def test_a_server_that_keeps_no_connection_is_said_to_have_no_pool_to_race():
    """gunicorn's sync worker closes after every answer: its answer is that, not a "safe" idle
    timeout read off a sweep in which nothing was ever reused."""
    from serverbench.lenses.idlepool.report import answer

    row = {"profile": "idlepool", "server": "gunicorn", "deployment": "gunicorn", "keepalive_s": 2.0,
           "keepalive_setting": "--keep-alive", "race_window_s": None, "safe_idle_timeout_s": 0.5,
           "closed_first_s": None, "never_kept": True, "raised_keepalive_s": 8.0, "raised_closes_window": None,
           "front_removes_race": None, "starved_beside": 2, "status": "ok", "reason": None}  # fmt: skip
    said = answer(pd.DataFrame([row]))
    assert said.startswith("gunicorn: never keeps a connection") and "safe" not in said, said
    kept = answer(pd.DataFrame([{**row, "never_kept": False, "closed_first_s": 2.2, "starved_beside": 1}]))
    assert "from 2.2 s idle it had closed the pooled connections first" in kept, kept
    assert kept.endswith("; 1 idle connection starves a fresh client."), kept
