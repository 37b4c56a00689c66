"""Your app under the catalogue's servers: an app is data (``apps`` and ``app`` in
config, serverbench.plan.apps), not the hello app written into each command. An app
in a directory outside the repository, with its own module and callable names, is
hosted by real servers that take it in different ways (a module:callable with a
working directory, a file with a callable); a server of a language the app lacks
is skipped with the reason."""

from __future__ import annotations

import copy
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import measure_cell, require, require_server, run_snakemake
from serverbench import REPO_ROOT, files
from serverbench.cell import verify
from serverbench.cell.phases import run_cell
from serverbench.host import appsite
from serverbench.plan import apps
from serverbench.plan import config as cfg
from serverbench.plan.shapes import Cell
from serverbench.record.vocabulary import Status

# Answers as the hello app does (the hello workload's check), and leaves a line per
# request in a log of the test's: proof that this app, not the hello app, answered.
MY_APP = """
def app(environ, start_response):
    with open({log!r}, "a") as log:
        log.write(environ["PATH_INFO"] + "\\n")
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "12")])
    return [b"Hello World!"]
"""


@pytest.fixture
def my_app(base_config, tmp_path):
    """A Python-only app in a package directory of the test's own (under pytest's 0700
    directories, where a server that drops privileges cannot read), made the run's app; its
    log where any user may write. Yields (the app's directory, its log)."""
    directory = tmp_path / "mine"
    (directory / "shop").mkdir(parents=True)
    logs = Path(tempfile.mkdtemp(prefix="serverbench-test-app-"))
    logs.chmod(0o1777)
    (directory / "shop" / "__init__.py").write_text("")
    (directory / "shop" / "entry.py").write_text(MY_APP.format(log=str(logs / "served.log")))
    base_config["apps"]["mine"] = {"python": {"dir": str(directory), "module": "shop.entry", "callable": "app"}}
    base_config["app"] = "mine"
    yield directory, logs / "served.log"
    shutil.rmtree(logs, ignore_errors=True)


@pytest.mark.parametrize("server", ["gunicorn", "uwsgi-debian", "mod_wsgi"])
def test_an_app_outside_the_repository_is_hosted(base_config, tmp_path, no_leftovers, my_app, server):
    """gunicorn takes shop.entry:app with --chdir, uWSGI the file shop/entry.py with --callable
    app, mod_wsgi-express (as www-data) the same file with --callable-object app: each from
    the run directory's readable copy of the app."""
    require_server(server, base_config)
    directory, served_log = my_app
    record = measure_cell(base_config, tmp_path / "cells", server=server)
    assert record["status"] == "ok", record["reason"]
    argv = " ".join(record["server"]["argv"])
    assert "hello" not in argv and str(directory) not in argv  # the copy, not the original
    wanted = {
        "gunicorn": "shop.entry:app",
        "uwsgi-debian": "/app/python/shop/entry.py --callable app",
        "mod_wsgi": "/app/python/shop/entry.py --callable-object app",
    }[server]
    assert wanted in argv, argv
    assert len(served_log.read_text().split()) >= record["load"]["requests"] > 0


def test_a_server_of_a_language_the_app_lacks_is_skipped(base_config, tmp_path, no_leftovers, my_app):
    record = measure_cell(base_config, tmp_path, server="starman")
    assert record["status"] == "skipped"
    assert "'mine' has no perl part" in record["reason"]


@pytest.mark.parametrize(
    ("expect", "body", "problem"),
    [
        ({"contains": "World"}, b"Hello World!", None),
        ({"contains": "Moon"}, b"Hello World!", "does not contain 'Moon'"),
        ({"json_keys": ["id", "randomNumber"]}, b'{"id": 3, "randomNumber": 7}', None),
        ({"json_keys": ["id", "randomNumber"]}, b'{"id": 3}', "without key(s) ['randomNumber']"),
        ({"json_keys": ["id"]}, b"[1, 2]", "expected an object"),
        ({"json_keys": ["id"]}, b"<html>", "is not JSON"),
        ({"matches": r"^<!DOCTYPE html>.*</html>\s*$"}, b"<!DOCTYPE html><p>x</p></html>\n", None),
        ({"matches": r"<td>\d+</td>"}, b"<td>x</td>", "does not match"),
    ],
)
def test_an_answer_is_checked_as_its_workload_says(expect, body, problem):
    """The body checks a workload can declare, beside the exact body and length + SHA-256."""
    problems = verify.body_problems(body, expect)
    assert problems == [] if problem is None else (len(problems) == 1 and problem in problems[0]), problems


# An app whose own workload answers JSON at /status: checked by its keys.
STATUS_APP = """
import json

def app(environ, start_response):
    body = json.dumps({"status": "up", "path": environ["PATH_INFO"]}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.mark.parametrize(("keys", "status"), [(["status", "path"], "ok"), (["status", "version"], "failed")])
def test_an_app_brings_its_own_workloads(base_config, tmp_path, no_leftovers, keys, status):
    """A workload of the app's own (its path, its check) is loaded and checked; an answer
    without a key the check names fails the cell with the key named."""
    require("gunicorn")
    directory = tmp_path / "status_app"
    directory.mkdir()
    (directory / "status.py").write_text(STATUS_APP)
    workload = {"path": "/status", "expect": {"status": 200, "json_keys": keys, "content_type": "application/json"}}
    base_config["apps"]["status"] = {
        "python": {"dir": str(directory), "module": "status", "callable": "app"},
        "workloads": {"up": workload},
    }
    base_config["app"] = "status"
    base_config["profiles"]["default"]["workloads"] = ["up"]
    record = run_cell(
        base_config,
        Cell("default", "wrk", "gunicorn", 10, 1, "up"),
        *(str(tmp_path / f"up.{suffix}") for suffix in ("json", "load.txt", "server.log")),
    )
    assert record["status"] == status, record["reason"]
    if status == "failed":
        assert "without key(s) ['version']" in record["reason"]
    else:
        assert record["load"]["requests"] > 0


def test_an_app_with_its_own_workloads_is_measured_on_them_by_every_profile(base_config):
    """A profile written for the hello app (``workloads: [hello]``, recycle's ``leak``) measures an
    app that brings its own workloads on them; a profile's workload the app has is kept."""
    base_config["apps"]["mine"] = {
        "python": {"dir": "/srv/mine", "module": "mine"},
        "workloads": {
            "home": {"path": "/", "expect": {"status": 200}},
            "orders": {"path": "/orders", "expect": {"status": 200}},
        },
    }
    base_config["app"] = "mine"
    config = cfg.validate(base_config)
    assert cfg.effective_profile(config, "default").workloads == ["home", "orders"]
    recycle = cfg.effective_profile(config, "recycle")
    settings = recycle.settings("recycle")
    assert recycle.workloads == ["home", "orders"] and settings.workload is None, settings  # None: the first, home
    config["profiles"]["default"]["workloads"] = ["hello", "orders"]
    assert cfg.effective_profile(config, "default").workloads == ["orders"]


def test_a_workload_asked_for_that_the_app_lacks_is_refused(base_config):
    base_config["apps"]["mine"] = {
        "python": {"dir": "/srv/mine", "module": "mine"},
        "workloads": {"home": {"path": "/", "expect": {"status": 200}}},
    }
    base_config.update(app="mine", workloads=["hello"])
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(base_config)
    assert "workloads[0]" in str(caught.value) and "unknown workload 'hello'" in str(caught.value)


BROKEN_PYTHON = "import json\nimport no_such_module_here\n\ndef app(environ, start_response):\n    pass\n"
# No newline after die's message: Perl adds " at FILE line 3."
DYING_PSGI = "use strict;\nmy $x = 1;\ndie 'no database configured' unless $ENV{SHOP_DB};\nsub { [200, [], ['x']] };\n"


@pytest.mark.parametrize("server", ["gunicorn", "starman"])
def test_an_app_that_does_not_load_fails_its_cell_with_file_and_line(base_config, tmp_path, no_leftovers, server):
    """A Python module whose import fails, a .psgi that dies: the cell is failed with the
    file and line from the server's log (also in the record's server.log_error)."""
    require(server)
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "entry.py").write_text(BROKEN_PYTHON)
    (directory / "app.psgi").write_text(DYING_PSGI)
    base_config["apps"]["broken"] = {
        "python": {"dir": str(directory), "module": "entry", "callable": "app"},
        "perl": {"file": str(directory / "app.psgi")},
    }
    base_config["app"] = "broken"
    record = measure_cell(base_config, tmp_path / "cells", server=server)
    assert record["status"] == "failed"
    error = record["server"]["log_error"]
    if server == "gunicorn":
        assert error["file"].endswith("/app/python/entry.py") and error["line"] == 2
        assert "No module named 'no_such_module_here'" in error["message"]
    else:
        assert error["file"].endswith("/app/perl/app.psgi") and error["line"] == 3
        assert "no database configured" in error["message"]
    assert f"{error['file']} line {error['line']}" in record["reason"]


def test_an_apps_placeholders_from_its_part(base_config):
    """A module's file is derived (the language's module_suffix), its callable defaults to
    the language's default_callable; {apps} is the run directory's copy of apps/."""
    spec = {"python": {"dir": "/srv/shop", "module": "shop.wsgi"}, "perl": {"file": "{apps}/perl/x.psgi"}}
    assert apps.app_values(base_config, spec, "python", "/run/apps") == {
        "app_dir": "/srv/shop",
        "app_module": "shop.wsgi",
        "app_callable": "application",
        "app_file": "/srv/shop/shop/wsgi.py",
    }
    assert apps.app_values(base_config, spec, "perl", "/run/apps")["app_file"] == "/run/apps/perl/x.psgi"


def test_a_server_needing_what_the_app_does_not_give_is_skipped(base_config, tmp_path, no_leftovers):
    """Starman takes the app's .psgi file; a Perl part that names only a directory gives none."""
    (tmp_path / "lib").mkdir()
    base_config["apps"]["dironly"] = {"perl": {"dir": str(tmp_path / "lib")}}
    base_config["app"] = "dironly"
    record = measure_cell(base_config, tmp_path / "cells", server="starman")
    assert record["status"] == "skipped" and "gives no app_file for starman" in record["reason"], record["reason"]


# ---- an app's own requirements (issue 80, item 6) -------------------------------------------

# Imports a library installed nowhere but the app's own site (a wheel built here) and answers
# with its greeting; logs where the library was imported from, for the test to see.
NEEDS_LIB = """
import shoplib

def app(environ, start_response):
    with open({log!r}, "a") as log:
        log.write(shoplib.__file__ + "\\n")
    body = shoplib.GREETING
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.fixture(scope="module")
def shoplib_wheels(tmp_path_factory) -> Path:
    """A directory holding the wheel of shoplib 1.0, a library no interpreter here has."""
    source = tmp_path_factory.mktemp("shoplib")
    (source / "shoplib.py").write_text('GREETING = b"Hello World!"\n')
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "shoplib"\nversion = "1.0"\n\n[tool.setuptools]\npy-modules = ["shoplib"]\n'
    )
    wheels = source / "wheels"
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    subprocess.run([*argv, str(source)], check=True, capture_output=True, cwd=source)
    return wheels


@pytest.fixture
def app_needing_lib(base_config, tmp_path, shoplib_wheels):
    """The run's app imports shoplib, which its part requires from the wheels' directory; the
    sites go where servers that drop privileges can read. Yields (config, served log, sites)."""
    directory = tmp_path / "needs"
    directory.mkdir()
    shared = Path(tempfile.mkdtemp(prefix="serverbench-test-sites-"))
    shared.chmod(0o1777)
    (directory / "entry.py").write_text(NEEDS_LIB.format(log=str(shared / "served.log")))
    part = {"dir": str(directory), "module": "entry", "callable": "app"}
    base_config["apps"]["needs"] = {
        "python": {**part, "requirements": ["shoplib==1.0"], "find_links": str(shoplib_wheels)}
    }
    base_config.update(app="needs", app_sites_dir=str(shared / "sites"), results=str(tmp_path / "results"))
    yield base_config, shared / "served.log", shared / "sites"
    shutil.rmtree(shared, ignore_errors=True)


def install_site(config: dict, app: str, tmp_path: Path) -> appsite.SiteRecord:
    """As rule app_site does: the app's requirements installed, its record where cells read it."""
    record = appsite.install(config, app, tmp_path / "site.log")
    files.write_json(apps.app_site_record(config, app), record.as_dict())
    return record


@pytest.mark.parametrize("server", ["gunicorn", "uwsgi-debian", "mod_wsgi", "unit-python"])
def test_an_apps_own_requirements_are_imported_by_every_python_server(app_needing_lib, tmp_path, no_leftovers, server):
    """shoplib is in no interpreter here: gunicorn's venv, Debian's uWSGI plugin, mod_wsgi-express
    (as www-data) and Unit's module each import it from the app's own site, through the entry
    module the cell writes, and answer with its greeting."""
    config, served, sites = app_needing_lib
    require_server(server, config)
    record = install_site(config, "needs", tmp_path)
    part = record.parts["python"]
    assert part.status is Status.OK and part.installed == {"shoplib": "1.0"} and not part.reused
    assert Path(part.site).parent == sites and (Path(part.site) / "shoplib.py").is_file()
    cell = measure_cell(config, tmp_path / "cells", server=server)
    assert cell["status"] == "ok", cell["reason"]
    imported = set(served.read_text().split())
    assert imported == {str(Path(part.site) / "shoplib.py")}, imported


def test_an_app_without_its_requirement_installed_is_skipped_and_a_site_is_reused(app_needing_lib, tmp_path):
    """Before rule app_site ran, the cell is skipped naming it; the same requirements again reuse
    the site; one pip cannot find is skipped with pip's words, the app's cells with it."""
    config, _, _ = app_needing_lib
    require("gunicorn")
    before = measure_cell(config, tmp_path / "before", server="gunicorn")
    assert before["status"] == "skipped" and "rule app_site installs them" in before["reason"], before["reason"]
    first = install_site(config, "needs", tmp_path).parts["python"]
    again = install_site(config, "needs", tmp_path).parts["python"]
    assert again.reused and again.site == first.site and again.installed == first.installed
    config["apps"]["needs"]["python"]["requirements"] = ["shoplib==9.9"]
    missing = install_site(config, "needs", tmp_path).parts["python"]
    assert missing.status is Status.SKIPPED and missing.site is None
    assert "pip could not install shoplib==9.9" in missing.reason and "shoplib==9.9" in missing.reason
    cell = measure_cell(config, tmp_path / "after", server="gunicorn")
    assert cell["status"] == "skipped" and "pip could not install shoplib==9.9" in cell["reason"], cell["reason"]


def test_a_perl_apps_requirements_are_debian_packages(base_config, tmp_path, no_leftovers):
    """A Perl part's requirements are Debian packages: one installed is recorded with its
    version and Starman serves the app; one apt cannot find skips the app's Perl cells with apt's
    words (there is no CPAN here)."""
    require("starman", "dpkg-query")
    psgi = tmp_path / "app.psgi"
    psgi.write_text("use Plack::Request;\nsub { [200, ['Content-Type' => 'text/plain'], ['Hello World!']] };\n")
    base_config["apps"]["perlish"] = {"perl": {"file": str(psgi), "requirements": ["libplack-perl"]}}
    base_config.update(app="perlish", results=str(tmp_path / "results"))
    part = install_site(base_config, "perlish", tmp_path).parts["perl"]
    assert part.status is Status.OK and part.reused and part.installed["libplack-perl"], part
    assert measure_cell(base_config, tmp_path / "ok", server="starman")["status"] == "ok"
    base_config["apps"]["perlish"]["perl"]["requirements"] = ["libserverbench-no-such-module-perl"]
    part = install_site(base_config, "perlish", tmp_path).parts["perl"]
    assert part.status is Status.SKIPPED and "libserverbench-no-such-module-perl" in part.reason, part
    cell = measure_cell(base_config, tmp_path / "skipped", server="starman")
    assert cell["status"] == "skipped" and "libserverbench-no-such-module-perl" in cell["reason"], cell["reason"]


def test_requirements_need_their_languages_installer(base_config):
    """pip's sources only where pip installs (not Perl's Debian packages); requirements only
    where the language has an installer."""
    part = {"file": "/srv/app.psgi", "requirements": ["libjson-perl"], "find_links": "/w"}
    base_config["apps"]["mine"] = {"perl": part}
    base_config["app"] = "mine"
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(copy.deepcopy(base_config))
    assert "apps.mine.perl.find_links" in str(caught.value) and "installer is debian" in str(caught.value)
    del base_config["languages"]["perl"]["requirements"]
    del base_config["apps"]["mine"]["perl"]["find_links"]
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(base_config)
    assert "apps.mine.perl.requirements" in str(caught.value) and "no `requirements` installer" in str(caught.value)


# ---- the docs' lines, run as written ----------------------------------------------------------

SHOP_WSGI = """
def application(environ, start_response):
    body = b"<table><tr><td>order 1</td></tr></table>"
    start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
    return [body]
"""
SHOP_PSGI = "sub { [200, ['Content-Type' => 'text/html'], ['<table><tr><td>order 1</td></tr></table>']] };\n"


def documented(marker: str) -> tuple[str, list[list[str]]]:
    """The YAML block of docs/your-app.md that opens with ``marker`` and the commands of the
    shell blocks after it, each an argv (continuation lines joined)."""
    text = (REPO_ROOT / "docs" / "your-app.md").read_text()
    start = text.index(f"```yaml\n{marker}\n")
    block = text[start + len("```yaml\n") : text.index("```", start + 7)]
    commands = [
        shlex.split(found.replace("\\\n", " "))
        for found in re.findall(r"```sh\n(.*?)```", text[start:], flags=re.DOTALL)
        if "mine.yaml" in found
    ]
    return block, commands


def test_the_documented_lines_run_as_written(tmp_path, no_leftovers):
    """docs/your-app.md's mine.yaml and its first command, with /srv/shop an app of the test's own:
    every named server hosts it and its `orders` workload checks out (a second of load each, the
    run otherwise as written); the advise command plans without a config error."""
    require_server("gunicorn-gthread")
    require_server("uwsgi-debian")
    require_server("unit-python")
    shop = tmp_path / "srv-shop"
    (shop / "shop").mkdir(parents=True)
    (shop / "shop" / "__init__.py").write_text("")
    (shop / "shop" / "wsgi.py").write_text(SHOP_WSGI)
    (shop / "app.psgi").write_text(SHOP_PSGI)
    block, commands = documented("# mine.yaml")
    mine = tmp_path / "mine.yaml"
    mine.write_text(block.replace("/srv/shop", str(shop)))
    run, advise = commands[0], next(argv for argv in commands if "profile=advise" in argv)
    assert run[:6] == ["snakemake", "--cores", "4", "--configfile", "config.yaml", "mine.yaml"], run
    results = tmp_path / "results"
    short = ["repeats=1", "duration=1", "concurrency=[2]", "tools=[wrk]", f"results={results}", "conformance=False",
             "work=False", "screenshots=False", "host_check_seconds=0"]  # fmt: skip

    def as_run(documented_argv: list[str], *extra: str) -> subprocess.CompletedProcess:
        """The documented argv with mine.yaml the test's copy, ``extra`` after its own --config items."""
        argv = [str(mine) if part == "mine.yaml" else part for part in documented_argv]
        return subprocess.run([sys.executable, "-m", *argv, *extra], cwd=REPO_ROOT, capture_output=True, text=True)

    done = as_run(run, *short, "--", str(results / "summary.csv"))
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(results / "summary.csv").set_index("server")
    assert set(summary.index) == {"gunicorn-gthread", "uwsgi-debian", "unit-python"}
    assert (summary["status"] == "ok").all() and set(summary["workload"]) == {"orders"}, summary[["status", "reason"]]
    dry = as_run(advise, f"results={tmp_path / 'advise'}", "-n")
    assert dry.returncode == 0, dry.stderr[-3000:]


def test_the_workflow_installs_an_apps_requirements_before_its_servers(tmp_path, shoplib_wheels, no_leftovers):
    """Through Snakemake: rule app_site installs the app's requirement (its record in
    results/apps/APP/site.json) before the cells that host it, and they serve it."""
    require_server("gunicorn-gthread")
    directory = tmp_path / "needs"
    directory.mkdir()
    (directory / "entry.py").write_text(NEEDS_LIB.format(log=str(tmp_path / "served.log")))
    part = {"dir": str(directory), "module": "entry", "callable": "app"}
    part.update(requirements=["shoplib==1.0"], find_links=str(shoplib_wheels))
    sites = Path(tempfile.mkdtemp(prefix="serverbench-test-sites-"))
    mine = tmp_path / "needs.yaml"
    mine.write_text(yaml.safe_dump({"app": "needs", "apps": {"needs": {"python": part}}, "app_sites_dir": str(sites)}))
    results = tmp_path / "results"
    try:
        done = run_snakemake(
            ["--cores", "4", str(results / "summary.csv"), "--configfile", "config.yaml", str(mine)],
            ["servers=[gunicorn-gthread]", "tools=[wrk]", "concurrency=[2]", "repeats=1", "duration=1",
             f"results={results}"],
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        site = files.read_json(results / "apps" / "needs" / "site.json")
        assert site["parts"]["python"]["status"] == "ok" and site["parts"]["python"]["installed"] == {"shoplib": "1.0"}
        summary = pd.read_csv(results / "summary.csv")
        assert list(summary["status"]) == ["ok"], summary[["server", "reason"]]
        assert "shoplib.py" in (tmp_path / "served.log").read_text()
    finally:
        shutil.rmtree(sites, ignore_errors=True)
