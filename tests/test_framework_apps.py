"""The reference framework apps (Flask, Django, Dancer2, Mojolicious: apps/python/frameworks,
apps/perl/frameworks) under real servers: TechEmpower's test types over a SQLite file that
each cell's setup makes (the app's `setup`), every answer checked by one verifier whatever
the framework (fortunes compared as tags and text, so &quot; and &#34; are one answer, and
an unescaped <script> is not). The frameworks come from envs/app-site.txt (Python) and
Debian's packages (Perl), installed by scripts/install."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest
from conftest import RECORDS_V1, missing, require, require_server
from serverbench import REPO_ROOT
from serverbench.cell import verify
from serverbench.cell.phases import run_cell
from serverbench.plan import apps
from serverbench.plan import config as cfg
from serverbench.plan.matrix import Matrix
from serverbench.plan.shapes import Cell
from serverbench.report import verdicts
from serverbench.report.answers import comparison_table
from serverbench.report.forest import forest_rows
from serverbench.report.spread import across_rows, spread_rows

APP_SITE = "/opt/serverbench/app-site"
WORKLOADS = ["plaintext", "json", "db", "queries", "updates", "fortunes"]


def require_framework(app: str) -> None:
    if app in ("flask", "django") and not os.path.isdir(f"{APP_SITE}/{app}"):
        missing(f"{APP_SITE} has no {app} (scripts/install installs envs/app-site.txt)")
    module = {"dancer2": "Dancer2", "mojolicious": "Mojolicious"}.get(app)
    if module is None:
        return
    # From / : Dancer2 reads a config.yaml in its working directory, and Perl's YAML refuses the repository's.
    loaded = subprocess.run(["perl", f"-M{module}", "-MDBD::SQLite", "-e1"], capture_output=True, cwd="/")
    if loaded.returncode:
        missing(f"Perl lacks {module} or DBD::SQLite (envs/apt.txt)")


# Each app under a server of its language.
APP_SERVERS = [
    ("flask", "gunicorn-gthread"),
    ("django", "uwsgi-debian"),
    ("dancer2", "starman"),
    ("mojolicious", "uwsgi-psgi"),
]


@pytest.mark.parametrize(("app", "server"), APP_SERVERS)
def test_a_framework_app_answers_every_workload_under_a_server(base_config, tmp_path, no_leftovers, app, server):
    """Every workload a cell: the app's setup made its database, the verifier passed its
    answer (a second answer on the connection, other rows, still 'keeps'), and the load
    got only 2xx answers."""
    require_framework(app)
    require_server(server, base_config)
    base_config["app"] = app
    for workload in WORKLOADS:
        base_config["profiles"]["default"]["workloads"] = [workload]
        paths = [str(tmp_path / f"{workload}.{suffix}") for suffix in ("json", "load.txt", "server.log")]
        record = run_cell(base_config, Cell("default", "wrk", server, 10, 1, workload), *paths)
        assert record["status"] == "ok", (workload, record["reason"])
        assert record["verify"]["ok"] and record["verify"]["keepalive"] == "keeps", (workload, record["verify"])
        assert record["load"]["requests"] > 0 and record["load"]["errors"]["non_2xx"] == 0, workload
    assert "the app's setup" in (tmp_path / "db.server.log").read_text()


PYTHON_DRIVER = """
import json, sys
from wsgiref.util import setup_testing_defaults
sys.path.insert(0, sys.argv[1])
module = __import__(sys.argv[2])
environ = {}
setup_testing_defaults(environ)
environ.update(PATH_INFO="/updates", QUERY_STRING="queries=7")
print(b"".join(module.application(environ, lambda status, headers, exc=None: None)).decode())
"""
PERL_DRIVER = """
use Plack::Test; use Plack::Util; use HTTP::Request::Common;
print Plack::Test->create(Plack::Util::load_psgi($ARGV[0]))->request(GET '/updates?queries=7')->content;
"""


@pytest.mark.parametrize("app", ["flask", "django", "dancer2", "mojolicious"])
def test_updates_write_the_rows_they_answer(tmp_path, app):
    """An update's answer is what the table holds afterwards, for each of its seven rows:
    the app wrote them (TechEmpower's verifier asks the same of the database)."""
    require_framework(app)
    database = tmp_path / "world.sqlite"
    subprocess.run([sys.executable, str(REPO_ROOT / "apps/data/make_world.py"), str(database)], check=True)
    before = dict(sqlite3.connect(database).execute("SELECT id, randomNumber FROM World"))
    env = {**os.environ, "SERVERBENCH_DATABASE": str(database)}
    if app in ("flask", "django"):
        frameworks = str(REPO_ROOT / "apps/python/frameworks")
        argv = [sys.executable, "-c", PYTHON_DRIVER, frameworks, f"{app}_world"]
    else:
        psgi = {"dancer2": "dancer2_world.psgi", "mojolicious": "mojo_world.psgi"}[app]
        argv = ["perl", "-e", PERL_DRIVER, str(REPO_ROOT / "apps/perl/frameworks" / psgi)]
    answered = json.loads(subprocess.run(argv, env=env, capture_output=True, check=True, text=True).stdout)
    after = dict(sqlite3.connect(database).execute("SELECT id, randomNumber FROM World"))
    assert len(answered) == len({row["id"] for row in answered}) == 7
    assert all(after[row["id"]] == row["randomNumber"] for row in answered)
    assert (
        sum(after[row["id"]] != before[row["id"]] for row in answered) >= 6
    )  # a new number may repeat the old: 1 in 10,000
    assert {i for i in before if before[i] != after[i]} <= {row["id"] for row in answered}


FORTUNES = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><td>11</td><td>&lt;script&gt;alert(&quot;x&quot;);&lt;/script&gt;</td></tr><tr><td>2</td><td>aren&#x27;t</td></tr></table></body></html>"  # noqa: E501


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (FORTUNES, None),
        # Another engine's escaping (Jinja2's &#34; and &#39;), its indentation and a doctype in capitals.
        (
            "<!doctype html>\n<html>\n <head><title>Fortunes</title></head>\n <body>\n  <table>\n   <tr><td>11</td>"
            "<td>&lt;script&gt;alert(&#34;x&#34;);&lt;/script&gt;</td></tr>\n"
            "   <tr><td>2</td><td>aren&#39;t</td></tr>\n"
            "  </table>\n </body>\n</html>\n",
            None,
        ),
        # A template that does not escape: its <script> is a tag, not text.
        (FORTUNES.replace("&lt;script&gt;", "<script>"), "HTML differs at token 14: '<script>'"),
        (FORTUNES.replace("<tr><td>2</td><td>aren&#x27;t</td></tr>", ""), "HTML differs at token 17: '</table>'"),
    ],
)
def test_a_page_is_compared_as_tags_and_text(body, problem):
    problems = verify.body_problems(body.encode(), {"html": FORTUNES})
    assert problems == [] if problem is None else (len(problems) == 1 and problem in problems[0]), problems


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'[{"id": 1, "randomNumber": 2}, {"id": 3, "randomNumber": 4}]', None),
        (b'[{"id": 1, "randomNumber": 2}]', "an array of 1, expected an array of 2"),
        (b'{"id": 1, "randomNumber": 2}', "a dict, expected an array of 2"),
        (b'[{"id": 1, "randomNumber": 2}, {"id": 3}]', "(item 1) without key(s) ['randomNumber']"),
    ],
)
def test_an_array_of_rows_is_checked_by_its_length_and_keys(body, problem):
    problems = verify.body_problems(body, {"json_items": 2, "json_keys": ["id", "randomNumber"]})
    assert problems == [] if problem is None else (len(problems) == 1 and problem in problems[0]), problems


def test_an_exact_body_names_its_first_differing_byte():
    (problem,) = verify.body_problems(b"Hello, Wor1d!", {"body": "Hello, World!"})
    assert problem.startswith("body differs from byte 10 (13 bytes, expected 13)"), problem


def test_an_apps_failing_setup_fails_its_cell_and_says_so(base_config, tmp_path, no_leftovers):
    require("gunicorn")
    base_config["apps"]["hello"]["setup"] = [sys.executable, "-c", "import sys; sys.exit('no database here')"]
    record = run_cell(
        base_config,
        Cell("default", "wrk", "gunicorn", 10, 1),
        *(str(tmp_path / f"c.{suffix}") for suffix in ("json", "load.txt", "server.log")),
    )
    assert (
        record["status"] == "failed"
        and "the app 'hello''s setup" in record["reason"]
        and "exited 1" in record["reason"]
    )
    assert "no database here" in (tmp_path / "c.server.log").read_text()


def test_an_apps_setup_takes_only_its_placeholders(base_config):
    base_config["apps"]["hello"]["setup"] = ["python", "make.py", "{port}"]
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(base_config)
    assert "apps.hello.setup[2]" in str(caught.value) and "unknown placeholder {port}" in str(caught.value)


def test_a_profile_of_several_apps_becomes_a_profile_per_app(base_config):
    """`apps` in a profile: one profile per app, each with the workloads the app answers and
    the servers of its languages (a baseline stays), and the selection names them all."""
    base_config["profiles"]["default"].update(
        apps=["hello", "flask", "dancer2"],
        workloads=["hello", "db"],
        server_spread=True,
        servers=["nginx-baseline", "gunicorn-gthread", "starman"],
    )
    base_config["profile"] = "default"
    config = cfg.validate(base_config)
    assert config["profile"] == ["default-hello", "default-flask", "default-dancer2"]
    assert "default" not in config["profiles"]
    profiles = {name: cfg.effective_profile(config, name) for name in config["profile"]}
    assert {name: (p.app, p.workloads, p.servers) for name, p in profiles.items()} == {
        "default-hello": ("hello", ["hello"], ["nginx-baseline", "gunicorn-gthread", "starman"]),
        "default-flask": ("flask", ["db"], ["nginx-baseline", "gunicorn-gthread"]),
        "default-dancer2": ("dancer2", ["db"], ["nginx-baseline", "starman"]),
    }
    assert all(p.server_spread for p in profiles.values())
    assert apps.workloads(config, "default-flask")["db"]["path"] == "/db"
    assert apps.app_name(config, "default-dancer2") == "dancer2" and apps.app_name(config, None) == "hello"


def test_an_unknown_app_of_a_profile_is_refused(base_config):
    base_config["profiles"]["default"]["apps"] = ["hello", "rails"]
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(base_config)
    assert "profiles.default.apps[1]" in str(caught.value) and "'rails' is not one of apps" in str(caught.value)


def test_the_server_spread_is_each_languages_fastest_against_its_slowest():
    """On the stored quick matrix with every cell comparable: per condition and language, the
    server of the highest median req/s against the one of the lowest, decided as any pair;
    the page lists them with their app (the profile's, where records predate `app`)."""
    config = cfg.load(REPO_ROOT / "config.yaml")
    config["comparisons"]["not_comparable_flags"] = []
    config["profiles"]["default"]["server_spread"] = True  # the profile the stored records name
    runs, summary = (pd.read_csv(RECORDS_V1 / f"{name}.csv") for name in ("runs", "summary"))
    table = verdicts.verdict_table(runs, summary, config)
    spread = table[table["kind"] == "server spread"]
    conditions = summary.groupby(["tool", "concurrency", "language"])  # one profile, one workload
    expected = 0
    for (tool, concurrency, language), cells in conditions:
        medians = (
            runs[
                (runs["tool"] == tool)
                & (runs["concurrency"] == concurrency)
                & runs["server"].isin(cells["server"])
                & (runs["status"] == "ok")
            ]
            .groupby("server")["rps"]
            .median()
        )
        if language not in ("python", "perl") or len(medians) < 2:
            continue
        expected += 1
        (row,) = spread[
            (spread["tool"] == tool) & (spread["concurrency"] == concurrency) & (spread["language_a"] == language)
        ].to_dict("records")
        assert (row["a"], row["b"]) == (medians.idxmax(), medians.idxmin())
        assert row["outcome"] in ("faster", "undetermined") and row["ratio"] >= 1, row["sentence"]
        assert "what the choice of server is worth here" in row["sentence"]
    assert len(spread) == expected > 0
    rows = spread_rows(table, summary, {"python": "Python", "perl": "Perl"})
    assert len(rows) == expected and {row["app"] for row in rows} == {"default"}
    assert {row["language"] for row in rows} == {"Python", "Perl"}


def test_each_languages_best_deployment_is_compared_across_the_apps():
    """The stored quick matrix as two app profiles of one `apps` profile: the hello app's
    cells, and a copy of its Python cells at twice the req/s as another app's. Per condition,
    Python's best deployment is the copy's fastest server, Perl's the hello app's, the faster
    named first, decided as any pair, and the page lists it with each language's title. Every
    sentence names its app or workload (answers.md lists them one after another), and the
    forest plot and the table of every comparison name its profile."""
    config = cfg.load(REPO_ROOT / "config.yaml")
    config["comparisons"]["not_comparable_flags"] = []
    spec = {**config["profiles"]["default"], "server_spread": True, "expanded_from": "apps"}
    config["profiles"].update({"apps-hello": {**spec, "app": "hello"}, "apps-double": {**spec, "app": "double"}})
    runs, summary = (pd.read_csv(RECORDS_V1 / f"{name}.csv") for name in ("runs", "summary"))
    python = runs["language"] == "python"
    doubled = runs[python].assign(profile="apps-double", rps=runs.loc[python, "rps"] * 2)
    runs = pd.concat([runs.assign(profile="apps-hello"), doubled], ignore_index=True)
    doubled_summary = summary[summary["language"] == "python"].assign(profile="apps-double")
    summary = pd.concat([summary.assign(profile="apps-hello"), doubled_summary], ignore_index=True)
    table = verdicts.verdict_table(runs, summary, config)
    across = table[table["kind"] == "best deployment"]
    assert len(across) == runs.groupby(["tool", "concurrency"]).ngroups > 0
    for _, row in across.iterrows():
        at = runs[(runs["tool"] == row["tool"]) & (runs["concurrency"] == row["concurrency"])]
        at = at[at["status"] == "ok"]
        best = at.groupby(["profile", "server", "language"])["rps"].median().groupby("language").idxmax()
        python_best, perl_best = (f"{best[lang][0][5:]} on {best[lang][1]}" for lang in ("python", "perl"))
        assert python_best.startswith("double on ") and perl_best.startswith("hello on ")
        assert {row["a"], row["b"]} == {python_best, perl_best} and row["profile"] == "apps"
        assert row["ratio"] >= 1 and "best Python deployment" in row["sentence"]
        assert f"connections on the {row['workload']} workload, the best " in row["sentence"], row["sentence"]
    rows = across_rows(table, {"python": "Python", "perl": "Perl"})
    assert len(rows) == len(across) and all(row["faster"].startswith(("Python: ", "Perl: ")) for row in rows)
    # Each app's own comparisons say which app they are of: the sentences alone tell them apart.
    spread = table[table["kind"] == "server spread"]
    named = spread["sentence"].str.extract(r"^Under \S+ at \d+ connections on the (\w+) app, ")[0]
    assert set(named) == {"hello", "double"}, spread["sentence"].tolist()
    # ... and so do the forest plot's rows (one row each, not two apps' intervals on one) and
    # the table of every comparison.
    plotted = forest_rows(table)
    assert plotted["comparison"].is_unique and len(plotted) > len(across)
    assert set(plotted["comparison"].str.split(",").str[0]) == {"apps-hello", "apps-double", "apps"}
    assert set(comparison_table(table)["condition"].str.split(",").str[0]) == {"apps-hello", "apps-double", "apps"}


@pytest.mark.parametrize(("app", "server"), [("flask", "gunicorn-gthread"), ("dancer2", "starman")])
def test_a_database_without_its_rows_fails_the_cell_with_the_apps_error(
    base_config, tmp_path, no_leftovers, app, server
):
    """A setup that made no tables (a database the app cannot use): the db cell fails with the
    answer's status and the error the app logged, where the framework logs one."""
    require_framework(app)
    require_server(server, base_config)
    base_config["app"] = app
    base_config["apps"][app]["setup"] = [sys.executable, "-c", "pass"]  # no database made
    base_config["profiles"]["default"]["workloads"] = ["db"]
    paths = [str(tmp_path / f"db.{suffix}") for suffix in ("json", "load.txt", "server.log")]
    record = run_cell(base_config, Cell("default", "wrk", server, 10, 1, "db"), *paths)
    assert record["status"] == "failed" and "status 500, expected 200" in record["reason"], record["reason"]
    if app == "flask":
        error = record["server"]["log_error"]
        assert error["file"].endswith("flask_world.py") and "no such table: World" in error["message"], error


def test_profiles_that_differ_only_in_their_app_probe_each_server_once():
    """The conformance probes host the hello app whatever a profile's app: apps-flask's
    gunicorn waits for apps-hello's probe of it, and apps-dancer2's Starman too."""
    config = cfg.read(REPO_ROOT / "config.yaml")
    config["profile"] = "apps"
    matrix = Matrix(cfg.validate(config))
    assert matrix.conformance_profile("apps-flask", "gunicorn-gthread") == "apps-hello"
    assert matrix.conformance_profile("apps-dancer2", "starman") == "apps-hello"
    assert matrix.conformance_profile("apps-hello", "unit-perl") == "apps-hello"


@pytest.mark.parametrize(
    ("app", "server", "program"),
    [
        ("flask", "gunicorn-gthread", "gunicorn"),
        ("django", "gunicorn-gthread", "gunicorn"),
        ("dancer2", "starman", "starman"),
        ("mojolicious", "starman", "starman"),
    ],
)
def test_each_framework_app_meets_techempowers_header_rules(base_config, tmp_path, no_leftovers, app, server, program):
    """Server and Date on the answer, the Date the answer's time, as TechEmpower's verifier asks
    (under gunicorn and Starman, which send a Date; Mojolicious sets its Server header itself)."""
    require_framework(app)
    require_server(server, base_config)
    base_config["app"] = app
    base_config["profiles"]["default"]["workloads"] = ["plaintext"]
    paths = [str(tmp_path / f"plaintext.{suffix}") for suffix in ("json", "load.txt", "server.log")]
    record = run_cell(base_config, Cell("default", "wrk", server, 10, 1, "plaintext"), *paths)
    assert record["status"] == "ok", record["reason"]
    assert record["verify"]["rule_problems"] == [], record["verify"]["headers"]
