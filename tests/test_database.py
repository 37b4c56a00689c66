"""A real database beside the server (serverbench.cell.database): PostgreSQL, a cluster per
cell copied from the run's template, started before the app's setup and stopped with the
cell. The apps really query it (its own counters, pg_stat_statements, against what the
answers need), an app that answers from a cache is failed for it, a database that cannot
start fails its cell with the reason, and nothing is left running."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import psutil
import pytest
from conftest import missing, require, require_server
from serverbench import REPO_ROOT
from serverbench.cell import database, servers
from serverbench.cell.phases import run_cell
from serverbench.host.runenv import make_rundir
from serverbench.plan import apps
from serverbench.plan import config as cfg
from serverbench.plan.shapes import Cell
from test_framework_apps import APP_SERVERS, require_framework

# Found as the product finds it (pg_config --bindir): no PostgreSQL version is named here.
POSTGRESQL = {"bindir": database.bindir({})}


def require_postgresql() -> None:
    if not os.access(f"{POSTGRESQL['bindir']}/postgres", os.X_OK):
        missing(f"no PostgreSQL at {POSTGRESQL['bindir']} (scripts/install: envs/apt.txt's postgresql)")


def postgres_processes(under: str = "serverbench-") -> list[int]:
    """PostgreSQL servers of serverbench's (their data directory in a run or template directory)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if process.info["name"] == "postgres" and under in cmdline:
            found.append(process.pid)
    return found


APPS = ("flask", "django", "dancer2", "mojolicious", "cached")
SETUP = ["python3", "{apps}/data/make_world.py", "{database}"]  # the reference apps' (config.yaml)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The reference apps' template, made once for the module as rule database_template
    makes it (their setup run in it), and copied for each app as the run keeps one per app."""
    require_postgresql()
    results = tmp_path_factory.mktemp("results")
    out = results / "databases" / "postgresql" / "flask"
    out.parent.mkdir(parents=True)
    database.make_template(POSTGRESQL, out, results / "template.log", SETUP, {"apps": str(REPO_ROOT / "apps")})
    for app in APPS[1:]:
        subprocess.run(["cp", "-a", str(out), str(out.parent / app)], check=True)
    return out


@pytest.fixture
def pg_config(base_config, template) -> dict:
    """The shipped config with its default profile on PostgreSQL, and the templates where the run keeps them."""
    base_config["results"] = str(template.parent.parent.parent)
    base_config["profiles"]["default"]["database"] = {"engine": "postgresql", "cpus": "server"}
    assert apps.database_template(base_config, "postgresql", "flask") == str(template)
    return base_config


def cell(config: dict, tmp_path: Path, server: str, workload: str) -> dict:
    paths = [str(tmp_path / f"{server}-{workload}.{suffix}") for suffix in ("json", "load.txt", "server.log")]
    return run_cell(config, Cell("default", "wrk", server, 2, 1, workload), *paths)


def test_the_template_is_a_stopped_cluster_each_cell_copies(template, tmp_path):
    """The template holds the app's role and database, its rows (its setup ran there) and
    pg_stat_statements; a copy starts on a socket in its own directory, counts nothing
    before the app runs, and stops."""
    rundir = make_rundir()  # as a cell's: PostgreSQL's user reaches it (pytest's are 0700)
    db = database.Database("postgresql", POSTGRESQL, template, rundir, cpus=[0])
    try:
        db.start(tmp_path / "postgres.log")
        assert db.counters() == database.Counters(0, 0)
        assert '"engine": "postgresql"' in db.descriptor_path.read_text()
        assert db.cluster.query('SELECT count(*) FROM "World"', database.APP_ROLE) == "10000"
        assert db.cluster.query('SELECT count(*) FROM "Fortune"', database.APP_ROLE) == "12"
        assert db.counters().statements == 0  # the harness's statements are not the app's
    finally:
        stopped = db.stop()
        shutil.rmtree(rundir)
    assert stopped == "fast", (tmp_path / "postgres.log").read_text()
    assert not postgres_processes(str(rundir))
    assert not postgres_processes(str(template))


@pytest.mark.parametrize(("app", "server"), APP_SERVERS)
def test_a_framework_app_queries_postgresql(pg_config, tmp_path, no_leftovers, app, server):
    """Each app's fortunes (UTF-8 and escaping through the database's rows) and updates
    (rows written back) verified against PostgreSQL, its statements counted: at least
    what the answers need, and the database stopped with the cell."""
    require_framework(app)
    require_server(server, pg_config)
    if app in ("dancer2", "mojolicious") and subprocess.run(["perl", "-MDBD::Pg", "-e1"]).returncode:
        missing("Perl lacks DBD::Pg (envs/apt.txt: libdbd-pg-perl)")
    pg_config["app"] = app
    clusters_before = set(Path(database.MEMORY_FS).glob("serverbench-pg-*"))
    for workload, needed in (("fortunes", 1), ("updates", 21)):
        record = cell(pg_config, tmp_path, server, workload)
        assert record["status"] == "ok", (workload, record["reason"])
        used = record["database"]
        assert used["engine"] == "postgresql" and used["placement"] == "server" and used["stop"] == "fast"
        assert used["needed_per_request"] == needed and used["answers"] == record["load"]["requests"] > 0
        assert used["statements"] >= needed * used["answers"], used
        assert used["version"].startswith("postgres (PostgreSQL)")
        assert used["storage"] == ("memory" if database.memory_fs() else "disk")
    assert not postgres_processes()
    assert set(Path(database.MEMORY_FS).glob("serverbench-pg-*")) <= clusters_before, "a cell's cluster left behind"


def test_an_app_that_answers_from_a_cache_is_failed(pg_config, tmp_path, no_leftovers):
    """Its answers are right, so the verifier passes them; the database ran one statement
    for a second of answers, and the cell fails saying so."""
    require("gunicorn")
    pg_config["apps"]["cached"] = {
        "python": {"dir": str(REPO_ROOT / "tests" / "apps"), "module": "cached_world"},
        "database": True,
        "setup": SETUP,
        "workloads": {"db": pg_config["apps"]["flask"]["workloads"]["db"]},
    }
    pg_config["app"] = "cached"
    record = cell(pg_config, tmp_path, "gunicorn", "db")
    assert record["status"] == "failed"
    answers = record["database"]["answers"]
    assert answers > 10 and record["database"]["statements"] <= 2
    assert f"for {answers} answers that need 1 each" in record["reason"]
    assert "answers not from the database" in record["reason"]
    assert not postgres_processes()


def test_a_harness_error_in_the_servers_stop_leaves_no_server_and_no_database(
    pg_config, tmp_path, no_leftovers, monkeypatch
):
    """A stop that raises (a harness bug, planted here) still ends the server (SIGKILL),
    its database and the database's copy in memory: the error goes on, nothing stays."""
    require("gunicorn")
    require_framework("flask")
    pg_config["app"] = "flask"

    def broken_stop(self, grace):
        raise RuntimeError("planted: the stop went wrong")

    monkeypatch.setattr(servers.ServerGroup, "stop", broken_stop)
    clusters_before = set(Path(database.MEMORY_FS).glob("serverbench-pg-*"))
    with pytest.raises(RuntimeError, match="planted"):
        cell(pg_config, tmp_path, "gunicorn", "db")
    assert not postgres_processes()
    assert set(Path(database.MEMORY_FS).glob("serverbench-pg-*")) <= clusters_before


def test_a_database_that_cannot_start_fails_the_cell_with_the_reason(pg_config, tmp_path, no_leftovers):
    require("gunicorn")
    require_framework("flask")
    pg_config["app"] = "flask"
    pg_config["databases"]["postgresql"]["bindir"] = str(tmp_path / "no-postgresql")
    record = cell(pg_config, tmp_path, "gunicorn", "db")
    assert record["status"] == "failed"
    assert record["reason"] == (
        f"the app's database did not start: no program {tmp_path}/no-postgresql/postgres"
        " (the database's bindir in `databases`)"
    )


def test_a_missing_template_fails_the_cell_naming_the_rule(pg_config, tmp_path):
    require_framework("flask")
    pg_config["app"] = "flask"
    pg_config["results"] = str(tmp_path / "elsewhere")
    record = cell(pg_config, tmp_path, "gunicorn", "db")
    assert record["status"] == "failed"
    assert "no database template" in record["reason"] and "database_template" in record["reason"]


def test_database_settings_are_checked_before_anything_starts(base_config):
    base_config["profiles"]["default"]["database"] = {"engine": "mysql"}
    with pytest.raises(cfg.ConfigError, match=r"profiles.default.database.engine.*unknown database 'mysql'"):
        cfg.validate(base_config)


def test_a_setup_that_names_the_database_needs_an_app_with_one(base_config):
    base_config["apps"]["plain"] = {"python": {"dir": "/tmp", "module": "x"}, "setup": ["true", "{database}"]}
    with pytest.raises(cfg.ConfigError, match=r"apps.plain.setup.*no `database: true`"):
        cfg.validate(base_config)


def test_a_mix_needs_its_parts_queries_by_weight(base_config):
    base_config["app"] = "flask"
    assert apps.queries_needed(base_config, "default", "mixed") == pytest.approx((3 * 0 + 1 + 1) / 5)
    assert apps.queries_needed(base_config, "default", "plaintext") is None
    assert apps.database_engine(base_config, "default") == "sqlite"
    base_config["app"] = "hello"
    assert apps.database_engine(base_config, "default") is None
