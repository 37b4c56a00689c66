"""Each server's recommended setting as the user deploys it: the catalogue's ``deploy``
template (a ``gunicorn.conf.py``, a uWSGI ini, Starman's command line) rendered with the
setting, the app's own paths (its files in this repository, not a run's copy) and an
address, into ``results/advice/SERVER/``, beside ``run.json``: the argv that starts it and
how it is stopped (``drain``: its graceful signal, the bound on the stop, the delay before it)
and the keep-alive to set behind a balancer (``keepalive``: above the balancer's idle timeout,
from the catalogue's ``keepalive`` fact).
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd

from serverbench import REPO_ROOT, files
from serverbench.lenses.advise.drain import DEFAULT_DELAY_S, Drain, drain_of
from serverbench.lenses.advise.keepalive import KeepAliveAdvice
from serverbench.lenses.advise.limit import limit_clause
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import requested_profile
from serverbench.plan.recycling import limit_in_force, recycling_argv

DEFAULT_ADDRESS = ("127.0.0.1", 8000)


def _note(row: dict) -> str:
    limit = row.get("cpu_limit")
    if limit is None or pd.isna(limit):
        return (
            f"{row['workers']} workers, {row['threads']} threads each: {row['capacity_rps']:.0f} req/s with "
            f"p99 ≤ {row['objective_p99_ms']:g} ms on {row['cpus']} CPU(s), {row['memory_mb']} MB PSS under that load"
        )
    # Under a limit the worker count is the limit's, not the host's: the note says so and what the host's would cost.
    return (
        f"{row['workers']} workers for a CPU limit of {limit:g}, {row['threads']} threads each: "
        f"{row['capacity_rps']:.0f} req/s with p99 ≤ {row['objective_p99_ms']:g} ms, {row['memory_mb']} MB PSS "
        f"under that load{limit_clause(row)}"
    )


def render(config: dict, profile: str, row: dict, address: tuple[str, int] = DEFAULT_ADDRESS) -> tuple[str, list]:
    """The configuration's text and the argv that starts it ({file} left for its path), for one
    recommendation row (a server's chosen model, workers, threads)."""
    entry = server_entry(config, row["model"])
    if entry.deploy is None:
        raise ValueError(f"the catalogue gives {row['model']} no `deploy`")
    name, spec = apps.chosen(config, profile)
    asked = _advise(config, profile).get("recycle") or {}
    if asked and recycling_argv(entry.recycle, asked["max_requests"], asked.get("jitter") or 0)[1]:
        asked = {}  # the server cannot take it: its settings ran with its own recycling, and so it is deployed
    values = {
        **apps.app_values(config, spec, entry.language, str(REPO_ROOT / "apps")),
        **entry.deploy.vars,
        "app": name,
        "host": address[0],
        "port": address[1],
        "workers": int(row["workers"]),
        "threads": int(row["threads"]),
        "capacity_note": _note(row),
        "drain": _drain(config, profile, row),
        "keepalive": KeepAliveAdvice(entry.keepalive),
        # The recycling it carries: the profile's fixed one, else the server's own default (None: never).
        "recycle": {
            "max_requests": limit_in_force(entry.recycle, asked.get("max_requests")),
            "jitter": asked.get("jitter") or 0,
            "counts": entry.recycle.counts.value if entry.recycle else None,
            "asked": bool(asked),
        },
    }
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(REPO_ROOT)), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    return environment.get_template(entry.deploy.template).render(values), list(entry.deploy.run)


def _advise(config: dict, profile: str) -> dict:
    return requested_profile(config, profile).get("advise") or {}


def _drain(config: dict, profile: str, row: dict) -> Drain:
    """The server's stop from its catalogue entry, against the row's objective."""
    delay = _advise(config, profile).get("drain_delay_s")
    delay = DEFAULT_DELAY_S if delay is None else delay
    return drain_of(server_entry(config, row["model"]).stop, float(row["objective_p99_ms"]), delay)


def write_configurations(config: dict, table: pd.DataFrame, out_dir) -> list[Path]:
    """Every server with a chosen setting: its configuration and run.json in out_dir/SERVER/."""
    written = []
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for row in table.to_dict("records"):
        entry = None if pd.isna(row.get("model")) else server_entry(config, row["model"])
        if entry is None or entry.deploy is None:
            continue
        text, run = render(config, row["profile"], row)
        folder = out_dir / row["server"]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / entry.deploy.file
        files.write_atomic(path, text)
        argv = [part.replace("{file}", str(path)) for part in run]
        drain = _drain(config, row["profile"], row)
        files.write_json(folder / "run.json", {"argv": argv, "stop": {"signal": drain.signal, **drain.to_dict()}})
        written.append(path)
    return written
