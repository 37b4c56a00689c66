"""advise's deployment conditions (issues 94 and 96): the drain settings its deployed file
carries, and a server held to a CPU limit (a cgroup quota, its cpuset the host's).

Not marked serial: nothing here compares a speed with a speed. The quota's bound is read in
CPU time (the server's cgroup usage per request, measured beside it without the quota), which
a busy machine can only lower under the quota, never raise.
"""

from __future__ import annotations

import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
from conftest import require
from serverbench import REPO_ROOT
from serverbench.lenses.advise import search
from serverbench.lenses.advise.deploy import write_configurations
from serverbench.lenses.advise.measure import Advising
from serverbench.plan import config as cfg


def _row(server: str, objective_ms: float) -> dict:
    return {
        "profile": "advise", "server": server, "model": server, "workers": 3, "threads": 1, "capacity_rps": 100.0,
        "objective_p99_ms": objective_ms, "cpus": 1, "memory_mb": 20.0,
    }  # fmt: skip


def test_the_deployed_file_says_how_to_stop_it_from_the_catalogue(tmp_path):
    """gunicorn (a graceful TERM bounded by --graceful-timeout, 30 s) under an objective longer
    than its default gets the bound raised to cover it, and the delay before the signal; uWSGI
    (no graceful stop by a signal) says so, and sets no bound."""
    config = cfg.load(REPO_ROOT / "config.yaml", {"profile": "advise"})
    config["profiles"]["advise"]["advise"] = {**config["profiles"]["advise"]["advise"], "drain_delay_s": 7}
    table = pd.DataFrame([_row("gunicorn", 40_000), _row("uwsgi", 50)])
    write_configurations(cfg.validate(config), table, tmp_path)
    gunicorn = (tmp_path / "gunicorn" / "gunicorn.conf.py").read_text()
    assert "graceful_timeout = 40\n" in gunicorn and "SIGTERM is its graceful stop" in gunicorn
    assert "its default, 30 s, is shorter than the objective's p99 (40000 ms)" in gunicorn
    assert "wait 7 s before the signal" in gunicorn
    stop = json.loads((tmp_path / "gunicorn" / "run.json").read_text())["stop"]
    assert (stop["signal"], stop["timeout_s"], stop["delay_s"]) == ("TERM", 40, 7)
    uwsgi = (tmp_path / "uwsgi" / "uwsgi.ini").read_text()
    assert "; Stopping it: it has no graceful stop by a signal: SIGTERM ends it at once" in uwsgi
    assert "wait 7 s before the signal" in uwsgi and "graceful" not in uwsgi.replace("no graceful stop", "")
    stop = json.loads((tmp_path / "uwsgi" / "run.json").read_text())["stop"]
    assert (stop["signal"], stop["graceful_signal"], stop["timeout_s"]) == ("TERM", None, None)


# ---- under a CPU limit: a real gunicorn, the planted CPU-bound app -------------------------

# CPUs' worth of time: a quarter of one CPU each 100 ms period, well below what two spinning
# workers get on the host's CPUs even while other tests share them (a quota never reached is
# never throttled: at half a CPU, a busy machine's share fell below it and nothing was).
LIMIT = 0.25
SPIN_EXPECT = {"status": 200, "matches": "^[0-9a-f]{64}$"}
SPIN_APP = {
    "python": {"dir": str(REPO_ROOT / "tests" / "apps"), "module": "advise_app"},
    "workloads": {"spin": {"path": "/spin", "expect": SPIN_EXPECT}},
}
QUICK = {
    "objective_p99_ms": 250, "memory_budget_mb": None, "peak_s": 0.5, "step_s": 1, "max_step_s": 2,
    "tail_samples": 150, "rate_steps": 2, "resolution": 0.1, "max_points": 1, "reloads": 0, "extend_points": 0,
}  # fmt: skip
SENDERS, EACH = 4, 15  # a fixed count of requests, however fast the machine


def spin_config(overrides: dict) -> dict:
    """The shipped config, the advise profile on the planted app (its /spin: a fixed number of
    SHA-256 rounds a request); ``overrides`` as on the command line."""
    config = cfg.load(REPO_ROOT / "config.yaml", {"profile": "advise", **overrides})
    config["apps"]["planted"] = SPIN_APP
    profile = config["profiles"]["advise"]
    profile.update(app="planted", workloads=["spin"], server_cpus=[0], client_cpus=[1], time_wait_max=10**6)
    profile["advise"] = {**profile["advise"], **QUICK}
    return cfg.validate(config)


def closed_loop(host: str, port: int) -> float:
    """SENDERS connections' worth of clients, EACH requests apiece one after the other: the wall time."""

    def send(_):
        for _ in range(EACH):
            connection = http.client.HTTPConnection(host, port, timeout=60)
            connection.request("GET", "/spin")
            assert connection.getresponse().read()
            connection.close()

    started = time.monotonic()
    with ThreadPoolExecutor(SENDERS) as pool:
        list(pool.map(send, range(SENDERS)))
    return time.monotonic() - started


def loaded(advising: Advising, setting: search.Setting):
    """A fresh start of the setting under a fixed count of requests: its wall time, the server
    tree's CPU time, its throttling meanwhile and the quota its cgroup read back."""
    with advising._session(setting) as session:
        launch = session.start()
        isolation = launch.isolation
        cpu, throttled = isolation.cpu_seconds(), isolation.throttling()
        wall = closed_loop(launch.host, launch.port)
        used = isolation.cpu_seconds() - cpu
        after = isolation.throttling()
        return wall, used, after.since(throttled) if throttled else None, isolation.cpu_quota_read()


def test_a_cpu_limit_throttles_a_cpu_bound_app_and_bounds_its_rate_by_the_quota(tmp_path, no_leftovers):
    """Under --config cpu_limit=0.25 the cgroup reads back exactly a quarter CPU, the search's reading
    counts throttled periods, and the rate the app is served at is bounded by the quota: at most
    a quarter CPU's worth of requests at the CPU time a request takes, measured beside it without
    the limit (a ratio: the machine's speed cancels, and a busy machine only lowers the rate)."""
    require("gunicorn", "oha")
    setting = search.Setting("gunicorn", 2)
    free = Advising(spin_config({}), cfg.effective_profile(spin_config({}), "advise"), "gunicorn",
                    tmp_path / "free.json", tmp_path / "free.log")  # fmt: skip
    wall_free, cpu_free, _, quota_free = loaded(free, setting)
    config = spin_config({"cpu_limit": str(LIMIT)})
    limited = Advising(config, cfg.effective_profile(config, "advise"), "gunicorn",
                       tmp_path / "limited.json", tmp_path / "limited.log")  # fmt: skip
    assert limited.profile.server_cpus == sorted(cfg.available_cpus())  # its cpuset the host's
    wall, cpu, throttled, quota = loaded(limited, setting)
    assert quota_free is None and quota == LIMIT
    assert throttled.throttled_periods > 0 and throttled.throttled_s > 0, throttled
    requests = SENDERS * EACH
    cpu_per_request = cpu_free / requests
    # The quota's bound: LIMIT CPU-seconds a second, plus one period's quota the first period may hold.
    bound = (LIMIT * wall + LIMIT * 0.1) / cpu_per_request / wall
    assert requests / wall <= bound * 1.2, (requests / wall, bound, cpu / wall)
    assert cpu / wall <= LIMIT * 1.2  # the CPU time it was given, whatever the machine
    # The search's own reading under the limit records both, beside its capacity.
    point = limited.measure(setting)
    assert point.ok and limited.points[-1].cpu_quota == LIMIT, limited.points[-1].reason
    assert limited.points[-1].throttled_periods > 0 and limited.points[-1].periods > 0
    assert wall > wall_free  # the same requests, a quarter CPU: slower than without the limit
