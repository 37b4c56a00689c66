"""advise's deployment conditions (issues 94 and 96): the drain settings its deployed file
carries, and a server held to a CPU limit (a cgroup quota, its cpuset the host's).

Not marked serial: nothing here compares a speed with a speed. The quota's bound is read in
CPU time (the server's cgroup usage per request, measured beside it without the quota), which
a busy machine can only lower under the quota, never raise.
"""

from __future__ import annotations

import json

import pandas as pd
from serverbench import REPO_ROOT
from serverbench.lenses.advise.deploy import write_configurations
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
