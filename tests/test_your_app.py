"""Your app under the catalogue's servers: an app is data (``apps`` and ``app`` in
config, serverbench.plan.apps), not the hello app written into each command. An app
in a directory outside the repository, with its own module and callable names, is
hosted by real servers that take it in different ways (a module:callable with a
working directory, a file with a callable); a server of a language the app lacks
is skipped with the reason."""

from __future__ import annotations

import pytest
from conftest import measure_cell, require

# Answers as the hello app does (the hello workload's check), and leaves a line per
# request in a file beside it: proof that this app, not the hello app, answered.
MY_APP = """
import os

def app(environ, start_response):
    with open(os.path.join(os.path.dirname(__file__), "served.log"), "a") as log:
        log.write(environ["PATH_INFO"] + "\\n")
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "12")])
    return [b"Hello World!"]
"""


@pytest.fixture
def my_app(base_config, tmp_path):
    """A Python-only app in a package directory of the test's own, made the run's app."""
    directory = tmp_path / "mine"
    (directory / "shop").mkdir(parents=True)
    (directory / "shop" / "__init__.py").write_text("")
    (directory / "shop" / "entry.py").write_text(MY_APP)
    directory.chmod(0o755)
    base_config["apps"]["mine"] = {"python": {"dir": str(directory), "module": "shop.entry", "callable": "app"}}
    base_config["app"] = "mine"
    return directory


@pytest.mark.parametrize("server", ["gunicorn", "uwsgi-debian"])
def test_an_app_outside_the_repository_is_hosted(base_config, tmp_path, no_leftovers, my_app, server):
    """gunicorn takes shop.entry:app with --chdir; uWSGI the file shop/entry.py with --callable app."""
    require("gunicorn" if server == "gunicorn" else "/usr/bin/uwsgi-core")
    record = measure_cell(base_config, tmp_path / "cells", server=server)
    assert record["status"] == "ok", record["reason"]
    argv = " ".join(record["server"]["argv"])
    assert "hello" not in argv
    assert ("shop.entry:app" in argv) if server == "gunicorn" else (f"{my_app}/shop/entry.py --callable app" in argv)
    served = (my_app / "shop" / "served.log").read_text().split()
    assert len(served) >= record["load"]["requests"] > 0


def test_a_server_of_a_language_the_app_lacks_is_skipped(base_config, tmp_path, no_leftovers, my_app):
    record = measure_cell(base_config, tmp_path, server="starman")
    assert record["status"] == "skipped"
    assert "'mine' has no perl part" in record["reason"]
