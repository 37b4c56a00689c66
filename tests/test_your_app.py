"""Your app under the catalogue's servers: an app is data (``apps`` and ``app`` in
config, serverbench.plan.apps), not the hello app written into each command. An app
in a directory outside the repository, with its own module and callable names, is
hosted by real servers that take it in different ways (a module:callable with a
working directory, a file with a callable); a server of a language the app lacks
is skipped with the reason."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import measure_cell, require, require_server
from serverbench.cell import verify
from serverbench.cell.phases import run_cell
from serverbench.plan import apps
from serverbench.plan import config as cfg
from serverbench.plan.shapes import Cell

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


def test_a_profile_workload_the_app_lacks_is_refused(base_config):
    base_config["apps"]["mine"] = {
        "python": {"dir": "/srv/mine", "module": "mine"},
        "workloads": {"home": {"path": "/", "expect": {"status": 200}}},
    }
    base_config["app"] = "mine"
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(base_config)
    assert "profiles.default.workloads[0]" in str(caught.value) and "unknown workload 'hello'" in str(caught.value)


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
