"""Workers that restart (issue 81): the recycle lens on real servers.

What each test asserts follows from what the server does, not from the machine's speed: a
planted server (tests/apps/recycling.py) whose workers leave after a few requests either
answer the last one and close, or die holding it; every restart of the dropping one fails the
request it held, the graceful one fails none. The leak is planted in the app (4 KiB an answer,
config app_workloads.leak), so its slope has a known answer.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import QUICK_PROFILE, add_server, require, require_server, run_snakemake
from serverbench import REPO_ROOT
from serverbench.cell.rawlog import RawLog
from serverbench.lenses.recycle.measure import capacity_lives, capacity_setting, one_run, settings, ways
from serverbench.lenses.recycle.record import Client, Setting, Upstream
from serverbench.lenses.recycle.settings import RecycleSettings
from serverbench.plan import config as cfg
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.recycling import NO_FLOOR, NO_JITTER, recycling_argv, with_argv
from serverbench.record.vocabulary import Status

# Times what it tests against a figure measured beside it: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial

RECYCLING = ["python", "{root}/tests/apps/recycling.py", "{port}", "{workers}"]
PLANTED_RECYCLE = {"counts": "requests", "default": None, "limit": ["--max-requests", "{max_requests}"]}
PLAN = {"workload": "leak", "settings": [{"max_requests": 40}], "clients": ["keepalive"], "upstream": ["keepalive"],
        "capacity": None, "load_s": 5, "concurrency": 2, "sample_every_s": 0.05, "window_s": 0.15}  # fmt: skip


def typed(**plan) -> RecycleSettings:
    """The recycle lens's settings of PLAN with ``plan``'s keys, as a profile's parse gives them."""
    return RecycleSettings.from_dict({**PLAN, **plan})


def measure(config: dict, tmp_path, server: str, setting: Setting, client: Client, upstream=None, **plan):
    """One run of ``server`` at ``setting`` with ``client``, 2 workers, the leaking workload."""
    profile = config["profiles"]["default"]
    profile.update(workers=2, server_cpus=[0], client_cpus=[1], memory_limit=None, recycle={**PLAN, **plan})
    if upstream is None and server_entry(config, server).fronted:
        upstream = Upstream.KEEPALIVE
    profile_now = effective_profile(config, "default")
    run = one_run(
        config, profile_now, server_entry(config, server), "leak", setting, client, tmp_path / "log", upstream
    )
    assert run.status == Status.OK, run.reason
    return run


def test_the_profiles_settings_are_read_as_declared_and_each_server_takes_only_its_own_argvs(base_config):
    """The shipped recycle profile's settings, each rendered against each server's catalogue
    entry: the argvs it declares, or the reason it cannot take the setting."""
    plan = cfg.effective_profile(base_config, "recycle").settings("recycle")
    found = settings(plan)
    assert [s.label for s in found] == ["own", "1000", "1000±100", "1000 ≥1s", "rss 64 MB ≥1s"]
    argv = {name: [recycling_argv(server_entry(base_config, name).recycle, s.max_requests, s.jitter,
                                  s.min_lifetime_s, s.rss_mb) for s in found]
            for name in ("gunicorn", "starman", "uwsgi-debian")}  # fmt: skip
    assert argv["gunicorn"][2] == (["--max-requests", "1000", "--max-requests-jitter", "100"], None)
    assert argv["starman"][2] == ([], NO_JITTER) and argv["gunicorn"][4] == ([], NO_FLOOR)
    assert argv["uwsgi-debian"][0] == ([], None)
    assert argv["uwsgi-debian"][4] == (["--min-worker-lifetime", "1", "--reload-on-rss", "64"], None)
    # Unit's limit is its application's limits.requests: no argv, a variable of its templates.
    unit = server_entry(base_config, "unit-python").recycle
    assert recycling_argv(unit, 1000) == ([], None) and recycling_argv(unit, 1000, 100)[1] == NO_JITTER
    changed = with_argv(base_config, "unit-python", [], 1000)["catalogue"]["unit-python"]
    assert changed["template_vars"] == {"max_requests": 1000}
    assert "template_vars" not in base_config["catalogue"]["unit-python"]
    # Capacity at the first setting each server can take: gunicorn spreads the limit, uWSGI's floor
    # is lowered (else it never recycles within a search), Starman and Unit take the limit alone.
    asked = plan.capacity.settings
    chosen = {name: capacity_setting(server_entry(base_config, name).recycle, asked).label
              for name in ("gunicorn", "uwsgi-debian", "starman", "unit-perl", "starman+nginx")}  # fmt: skip
    assert chosen == {"gunicorn": "1000±100", "uwsgi-debian": "1000 ≥1s", "starman": "1000", "unit-perl": "1000",
                      "starman+nginx": "1000"}  # fmt: skip


# The setting at which none of the server's workers restarts over two kept-alive connections:
# gunicorn's own (no limit); Starman's limit of 100 counts connections, and each of its two
# workers holds one, so it is never reached however many requests the connection carries.
NEVER_RESTARTS = {"gunicorn": Setting(), "starman": Setting(100)}


@pytest.mark.parametrize("server", ["gunicorn", "starman"])
def test_the_leaks_slope_is_the_planted_leak_and_recycling_bounds_it(base_config, tmp_path, server, no_leftovers):
    require_server(server, base_config)
    planted = base_config["app_workloads"]["leak"]["leaks_bytes"]
    setting = NEVER_RESTARTS[server]
    never = measure(base_config, tmp_path, server, setting, Client.KEEPALIVE, load_s=4)
    assert never.restarts == []
    # Past the limit on each worker, or the run proves nothing: at a limit of 100 that is 50
    # answers a second (Starman's own 1,000 asked 500 a second of the machine).
    assert never.answered > 2 * (setting.max_requests or 0), never.answered
    assert never.leak_bytes_per_request == pytest.approx(planted, rel=0.10), never.leak_bytes_per_request
    assert never.leak_r2 > 0.95 and never.bounded is False
    # Starman counts connections, gunicorn requests: a connection per request recycles both.
    bounded = measure(base_config, tmp_path, server, Setting(100), Client.FRESH, load_s=4)
    assert len(bounded.restarts) >= 2 and bounded.bounded is True
    assert bounded.peak_second_half_bytes < never.peak_second_half_bytes


def test_starman_behind_nginx_recycles_only_when_nginx_opens_a_connection_per_request(
    base_config, tmp_path, no_leftovers
):
    """Starman's limit counts connections: behind nginx keeping its upstream connections, a
    limit of 100 is never reached however many requests pass; with a connection per request
    upstream (no `keepalive` in the front's config) its workers restart every 100."""
    require_server("starman+nginx", base_config)
    both = typed(clients=["keepalive", "fresh"], upstream=["keepalive", "close"])
    assert [(c.value, u.value) for c, u in ways(server_entry(base_config, "starman+nginx"), both)] == [
        ("keepalive", "keepalive"), ("fresh", "keepalive"), ("keepalive", "close")]  # fmt: skip
    fresh = typed(clients=["fresh"], upstream=["close"])
    assert ways(server_entry(base_config, "starman"), fresh) == [(Client.FRESH, None)]
    kept = measure(base_config, tmp_path, "starman+nginx", Setting(100), Client.KEEPALIVE, load_s=3)
    closed = measure(base_config, tmp_path, "starman+nginx", Setting(100), Client.KEEPALIVE, load_s=3,
                     upstream=Upstream.CLOSE)  # fmt: skip
    assert kept.upstream == Upstream.KEEPALIVE and closed.upstream == Upstream.CLOSE
    assert kept.answered > 2 * 100 and kept.restarts == [], kept.restarts
    assert closed.answered > 2 * 100 and len(closed.restarts) >= 2


def test_a_worker_that_takes_half_a_second_to_start_after_each_answer_bounds_the_capacity(
    base_config, tmp_path, no_leftovers
):
    """One planted worker, replaced after every answer by one that waits 0.5 s before it accepts:
    it cannot answer more than 2 requests a second, and offered more (evenly spaced) each request
    waits longer than the one before, so its capacity at p99 within 50 ms is under 4 requests a
    second — whatever the machine's speed (a faster one waits the same 0.5 s). A run at a low rate
    lasts 2 s (100 answers wanted, at most 2 s): at 1 request a second or more it holds two. Without recycling
    the same server meets the objective above that (a Python accept loop answering a hello world);
    the workers seen to leave are the restarts, and only there."""
    require("oha")
    add_server(base_config, "slow-boot", [*RECYCLING, "graceful", "--boot-s", "0.5"], recycle=PLANTED_RECYCLE)
    capacity = {"settings": [{"max_requests": 1, "jitter": 0}], "lives": 1, "objective_p99_ms": 50, "tool": "oha-fresh",
                "peak_tool": "oha-fresh-closed", "peak_s": 0.5, "step_s": 0.5, "max_step_s": 2, "tail_samples": 100,
                "rate_steps": 3, "resolution": 0.1, "max_connections": 8}  # fmt: skip
    profile = base_config["profiles"]["default"]
    plan = {**PLAN, "capacity": capacity}
    profile.update(workers=1, server_cpus=[0], client_cpus=[1], memory_limit=None, recycle=plan)
    raw = RawLog(str(tmp_path / "slow-boot.raw.txt"))
    own, recycled = capacity_lives(
        base_config,
        effective_profile(base_config, "default"),
        server_entry(base_config, "slow-boot"),
        "leak",
        tmp_path / "log",
        raw,
    )
    assert own.status == recycled.status == Status.OK, (own.reason, recycled.reason)
    assert (own.setting.label, recycled.setting.label, recycled.limit) == ("own", "1", 1)
    assert own.met_rps > 4 and own.workers_left == 0, own
    assert recycled.steps and recycled.met_rps < 4 and recycled.workers_left >= 2, recycled
    # Every run's output is in the raw file, under the header its step names.
    text = (tmp_path / "slow-boot.raw.txt").read_text()
    assert all(step.raw_header in text for step in (*own.steps, *recycled.steps))


def test_restarts_that_drop_requests_are_told_from_restarts_that_hand_over(tmp_path, no_leftovers):
    """Two planted servers through the workflow, their workers leaving every 40 requests: the one
    that drops the request it holds fails requests around its restarts and is *higher* on failed
    requests per second than at its own setting (no recycling); the one that hands over fails none
    and is *equivalent*. Through every output: recycle.csv, each record, the verdicts, the checks
    offered to releases, the page's section and answers.md."""
    results = tmp_path / "results"
    configfile = tmp_path / "recycle.yaml"
    catalogue = {name: {"language": "python", "command": [*RECYCLING, mode], "recycle": PLANTED_RECYCLE}
                 for name, mode in (("drops", "drop"), ("hands-over", "graceful"))}  # fmt: skip
    profile = {**QUICK_PROFILE, "description": "two planted servers recycling", "servers": sorted(catalogue),
               "repeats": 1, "workers": 2, "memory_limit": None,
               "recycle": {**PLAN, "capacity": {"settings": [{"max_requests": 40}], "peak_s": 0.5, "step_s": 0.5,
                                                "max_step_s": 0.5, "rate_steps": 1}}}  # fmt: skip
    configfile.write_text(yaml.safe_dump({"catalogue": catalogue, "profiles": {"rec": profile}}))
    done = run_snakemake(
        ["--cores", "4", str(results / "index.html"), "--configfile", "config.yaml", str(configfile)],
        ["profile=rec", f"results={results}"],
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_csv(results / "recycle.csv").set_index(["server", "setting"])
    dropped, graceful = table.loc[("drops", "40")], table.loc[("hands-over", "40")]
    # Restarts, seen as processes leaving the tree; the dropping one fails the request each departing
    # worker held (on a kept-alive connection: dropped after it was read), the graceful one none.
    assert dropped["restarts"] >= 2 and graceful["restarts"] >= 2
    assert dropped["failed"] >= dropped["restarts"] // 2 and dropped["failed_per_restart"] > 0
    assert graceful["failed"] == 0 and graceful["failed_per_restart"] == 0
    assert table.loc[("drops", "own"), "restarts"] == 0 and table.loc[("drops", "own"), "failed"] == 0
    record = json.loads((results / "recycle" / "rec" / "drops.json").read_text())
    assert sum(restart["failed"] for run in record["runs"] for restart in run["restarts"]) >= 1
    verdicts = pd.read_csv(results / "recycle_verdicts.csv").set_index(["server", "check"])
    higher, same = verdicts.loc[("drops", "failed_per_s")], verdicts.loc[("hands-over", "failed_per_s")]
    assert higher["outcome"] == "higher" and higher["ci_low"] > 0, higher
    assert same["outcome"] == "equivalent" and same["estimate"] == 0, same
    checks = pd.read_csv(results / "recycle_checks.csv").set_index(["server", "check"])
    assert checks.loc[("drops", "recycle_failed_per_restart"), "value"] > 0
    assert checks.loc[("hands-over", "recycle_failed_per_restart"), "value"] == 0
    # Capacity at the objective, own and at 40, each a start of its own: the workers seen to leave
    # are the restarts at 40 (a connection per request: each worker's 40th closes it), none at own.
    capacity = pd.read_csv(results / "recycle_capacity.csv").set_index(["server", "setting"])
    assert len(capacity) == 4 and set(capacity["status"]) == {"ok"}, capacity[["status", "reason"]]
    assert (capacity.xs("own", level="setting")["workers_left"] == 0).all()
    assert (capacity.xs("40", level="setting")["workers_left"] >= 1).all()
    assert capacity.loc[("hands-over", "own"), "capacity_rps"] > 0
    page = (results / "index.html").read_text()
    assert "Do your workers restart, and what does it cost?" in page and 'href="recycle.csv"' in page
    assert 'href="recycle_capacity.csv"' in page
    answers = (results / "answers.md").read_text()
    assert "## Do your workers restart, and what does it cost?" in answers
    said = "hands-over at 40 and hands-over at own (keepalive clients): failed requests per second equivalent"
    assert said in answers
    assert "Capacity at p99 within 50 ms" in answers and "hands-over at 40: " in answers


def test_each_servers_own_recycling_is_said_per_client_and_upstream():
    """From the profile's run kept in docs/data: Starman behind nginx restarts only where nginx
    opens a connection per request, and the sentence says which run that was."""
    from serverbench.lenses.recycle.report import own_sentences

    said = {line.split(" ", 1)[0]: line for line in own_sentences(pd.read_csv(REPO_ROOT / "docs/data/recycle.csv"))}
    assert said["starman+nginx"] == (
        "starman+nginx recycles every 1000 connections by default: 0 restarts with fresh clients (upstream"
        " keepalive), 30 restarts with keepalive clients (upstream close), 0 restarts with keepalive clients"
        " (upstream keepalive) at its own setting."
    ), said["starman+nginx"]
    assert said["starman"].endswith(
        "44 restarts with fresh clients, 0 restarts with keepalive clients at its own setting."
    )


# An app of the user's that keeps what it answers: 2 KiB a request, none planted by serverbench.
OWN_LEAKING_APP = """
KEPT = []


def application(environ, start_response):
    KEPT.append(bytearray(2048))
    body = b"<table><tr><td>order 1</td></tr></table>"
    start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
    return [body]
"""


def test_the_recycle_profile_measures_a_users_app_on_its_own_workload(base_config, tmp_path, no_leftovers):
    """The shipped recycle profile given an app of one's own (its workloads, no `leak`): gunicorn
    serves the app's workload, the record says no leak was planted, and the table says the leak
    it measured is the app's own, in bytes per answer."""
    from serverbench.lenses.recycle.measure import run_recycle
    from serverbench.lenses.recycle.record import load_recycle
    from serverbench.lenses.recycle.report import table_rows
    from serverbench.lenses.recycle.table import recycle_table

    require_server("gunicorn")
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "wsgi.py").write_text(OWN_LEAKING_APP)
    base_config["apps"]["mine"] = {
        "python": {"dir": str(tmp_path), "module": "shop.wsgi"},
        "workloads": {"orders": {"path": "/orders", "expect": {"status": 200, "contains": "<table>"}}},
    }
    base_config["app"] = "mine"
    recycle = base_config["profiles"]["recycle"]
    recycle.update(servers=["gunicorn"], memory_limit=None)
    plan = {key: value for key, value in recycle["recycle"].items() if key != "capacity"}
    recycle["recycle"] = {**plan, "settings": [{"max_requests": 1000}], "clients": ["keepalive"], "load_s": 3}
    config = cfg.validate(base_config)
    record = run_recycle(config, "recycle", "gunicorn", tmp_path / "gunicorn.json", tmp_path / "gunicorn.log")
    assert record["status"] == "ok", record["reason"]
    assert record["workload"] == "orders" and record["leaks_bytes"] is None
    rows = table_rows(recycle_table([load_recycle(record)]))
    own = [row for row in rows if row["recycling"] == "own"]
    assert own and own[0]["leak per answer (× planted)"].endswith(" B (the app's own)"), own
