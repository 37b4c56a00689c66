"""The ``serverbench`` command line: its usage is built without importing what the commands
run, and ``serverbench plan`` / ``serverbench list`` read a config of one's own
(``--configfile``) as a run does."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from serverbench import REPO_ROOT
from serverbench.drive.usage import COMMANDS

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

HEAVY = ("scipy", "numpy", "pandas", "statsmodels", "altair", "jinja2", "jsonschema")
# Builds the command line, asks for the whole usage and then each command's, and prints which of
# HEAVY that imported, with the whole usage.
USAGE_IMPORTS = f"""
import contextlib, io, json, sys
from serverbench import cli

parser = cli.parser()
shown = io.StringIO()
with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
    parser.parse_args(["--help"])
for name in {list(COMMANDS)!r}:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        parser.parse_args([name, "--help"])
print(json.dumps({{"imported": [name for name in {HEAVY!r} if name in sys.modules], "help": shown.getvalue()}}))
"""


def test_the_usage_imports_none_of_what_the_commands_run():
    """`serverbench --help` and every command's --help: the whole usage, with none of SciPy,
    pandas, the config's schema checker and the rest imported (each command's module is
    imported only when it runs)."""
    done = subprocess.run([sys.executable, "-c", USAGE_IMPORTS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["imported"] == []
    assert re.findall(r"^    (\S+) ", found["help"], flags=re.MULTILINE) == list(COMMANDS), found["help"]


SHOP_WSGI = """
def application(environ, start_response):
    body = b"<table><tr><td>order 1</td></tr></table>"
    start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.fixture
def mine(tmp_path) -> Path:
    """docs/your-app.md's mine.yaml (an app `mine` with its own workload `orders`), its /srv/shop
    an app of the test's own."""
    shop = tmp_path / "srv-shop"
    (shop / "shop").mkdir(parents=True)
    (shop / "shop" / "__init__.py").write_text("")
    (shop / "shop" / "wsgi.py").write_text(SHOP_WSGI)
    (shop / "app.psgi").write_text("sub { [200, ['Content-Type' => 'text/html'], ['<table></table>']] };\n")
    text = (REPO_ROOT / "docs" / "your-app.md").read_text()
    start = text.index("```yaml\n# mine.yaml\n") + len("```yaml\n")
    path = tmp_path / "mine.yaml"
    path.write_text(text[start : text.index("```", start)].replace("/srv/shop", str(shop)))
    return path


def documented_plan() -> list[str]:
    """docs/your-app.md's `serverbench plan` line, an argv."""
    text = (REPO_ROOT / "docs" / "your-app.md").read_text()
    [line] = re.findall(r"^serverbench plan .*$", text, flags=re.MULTILINE)
    return shlex.split(line)


def serverbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "serverbench.cli", *argv], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )


def test_plan_reads_a_config_of_ones_own(mine, tmp_path):
    """The documented `serverbench plan default --configfile mine.yaml`, with the run's own
    KEY=VALUE items before --configfile: the app and its workload are mine.yaml's, the servers
    and cells those the items leave (three servers, one tool, one concurrency, one round)."""
    profile, *rest = documented_plan()[2:]
    assert rest == ["--configfile", "mine.yaml"], rest
    servers = ["gunicorn-gthread", "uwsgi-debian", "unit-python"]
    items = [f"servers=[{', '.join(servers)}]", "workloads=[orders]", "tools=[wrk]", "concurrency=[2]", "repeats=1"]
    done = serverbench("plan", profile, *items, "--configfile", str(mine), "--results", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (plan["apps"], plan["workloads"]) == ({profile: "mine"}, {profile: ["orders"]})
    assert plan["servers"] == sorted(servers) and plan["cells"] == len(servers)
    shown = serverbench("plan", profile, *items, "--configfile", str(mine), "--results", str(tmp_path))
    assert "  app: mine with orders\n" in shown.stdout, shown.stdout
    # Without mine.yaml the workload is nobody's: the plan came from the file.
    alone = serverbench("plan", profile, *items, "--results", str(tmp_path))
    assert alone.returncode == 2 and "orders" in alone.stderr, alone.stderr


def test_an_override_after_configfile_is_named_not_read_as_a_file(mine):
    """--configfile takes every argument after it (as snakemake's): an item written after it is
    refused by name, with where it goes."""
    done = serverbench("plan", "default", "--configfile", str(mine), "workloads=[orders]")
    assert done.returncode == 2
    assert "no such file: workloads=[orders]; a KEY=VALUE override goes before --configfile" in done.stderr


def test_list_merges_a_config_of_ones_own_over_config_yaml(mine):
    """`serverbench list apps --configfile mine.yaml`: mine.yaml's app beside config.yaml's, its
    workload listed (merged key by key, as snakemake merges --configfile, not put in its place)."""
    done = serverbench("list", "apps", "--configfile", str(mine), "--json")
    assert done.returncode == 0, done.stderr
    listed = {app["name"]: app for app in json.loads(done.stdout)["apps"]}
    assert listed["mine"]["workloads"] == ["orders"] and "hello" in listed
