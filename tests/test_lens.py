"""A lens is one folder behind one interface: the tests' own toy lens (tests/lenses/toy_bytes,
how many bytes each server sends per answer) added by one registry entry (config `lenses`)
runs through the real workflow to its CSV, its comparisons, a section of the page, a
paragraph of answers.md and the console, and no other file of the repository names it."""

import dataclasses
import importlib
import json
import os
import re
import subprocess
import sys
from enum import StrEnum

import pandas as pd
import pytest
import yaml
from conftest import REPO_ROOT, require, run_snakemake
from serverbench import registry
from serverbench.drive import preview
from serverbench.drive.preview import SMALL_JOBS_S
from serverbench.lens import Words
from serverbench.plan import config as cfg
from serverbench.plan.matrix import Matrix
from serverbench.record.vocabulary import Kind, Metric, Outcome

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

LENSES = REPO_ROOT / "tests" / "lenses"
TOY = "toy_bytes"


def test_the_registry_lists_the_built_in_lenses_and_those_a_config_adds(monkeypatch):
    monkeypatch.syspath_prepend(str(LENSES))
    built_in = [lens.name for lens in registry.lenses({})]
    assert built_in == [
        "http",
        "deploy",
        "advise",
        "front",
        "idlepool",
        "releases",
        "operations",
        "recycle",
        "shutdown",
        "overload",
        "work",
    ]
    added = registry.lenses({"lenses": [TOY]})
    assert [lens.name for lens in added] == [*built_in, TOY]
    toy = added[-1]
    assert toy.section is not None and toy.question.endswith("?")
    # Nothing of its own to wire: the core writes both its rules from its declaration.
    assert not toy.rules.exists() and toy.measure_job and toy.table_rule == f"{TOY}_table"
    with pytest.raises(ValueError, match="two lenses are called"):
        registry.lenses({"lenses": [TOY, TOY]})


def test_the_registry_takes_the_toy_lenss_own_word_and_it_reaches_its_verdict_table(monkeypatch):
    """The toy judges on a metric of its own, declared through the interface (``lens.Words``), not
    a core word: the registry loads it, and its comparisons' rows carry that word."""
    monkeypatch.syspath_prepend(str(LENSES))
    toy = registry.lenses({"lenses": [TOY]})[-1]
    own = [word.value for word in toy.words.metrics]
    assert own == ["bytes per answer"] and not set(own) & set(Metric)
    decide = importlib.import_module(f"{TOY}.decide")
    table = pd.DataFrame({"profile": "p", "server": ["big", "small"], "status": "ok", "bytes": [300, 100]})
    verdicts = decide.verdicts(table, {"comparisons": {"pairs": [["big", "small"]]}})
    row = verdicts.iloc[0]
    assert (row["metric"], row["kind"], row["outcome"], row["ratio"]) == ("bytes per answer", Kind.NAMED, "higher", 3.0)


def _toy_saying(monkeypatch, **words: dict[str, str]):
    """The toy lens declaring, in each field given, the words given (member name → word)."""
    monkeypatch.syspath_prepend(str(LENSES))
    toy = registry.lenses({"lenses": [TOY]})[-1]
    declared = {field: StrEnum(f"Toy{field.title()}", members) for field, members in words.items()}
    return dataclasses.replace(toy, words=Words(**declared))


@pytest.mark.parametrize(
    ("words", "refused"),
    [
        # Another lens's word in the same field: the recycle lens's kind.
        (
            {"kinds": {"SETTING": "setting"}},
            "the 'toy_bytes' lens declares 'setting' among its kinds: a word of the 'recycle' lens",
        ),
        # The shutdown lens's metric (its words.py).
        (
            {"metrics": {"SHUTDOWN": "shutdown"}},
            "the 'toy_bytes' lens declares 'shutdown' among its metrics: a word of the 'shutdown' lens",
        ),
        # A core word: a table read back could not tell whose it holds.
        ({"metrics": {"SPEED": "speed"}}, "declares 'speed' among its metrics: a word of the core vocabulary"),
        ({"statuses": {"SKIPPED": "skipped"}}, "declares 'skipped' among its statuses: a word of the core vocabulary"),
        # The releases lens's outcome and the operations lens's status: theirs, not the core's.
        (
            {"outcomes": {"CHANGED": "changed"}},
            "declares 'changed' among its outcomes: a word of the 'releases' lens",
        ),
        (
            {"statuses": {"BROKEN": "broken"}},
            "declares 'broken' among its statuses: a word of the 'operations' lens",
        ),
        # Malformed: a comma splits a CSV cell, an empty word reads back as no outcome.
        (
            {"outcomes": {"SPLIT": "more, less"}},
            "the 'toy_bytes' lens declares malformed words \\(outcomes 'more, less'\\)",
        ),
        ({"outcomes": {"EMPTY": ""}}, "malformed words \\(outcomes ''\\)"),
    ],
)
def test_the_registry_refuses_a_lenss_word_the_core_or_another_lens_has_or_a_malformed_one(monkeypatch, words, refused):
    built_in = registry.lenses({})
    saying = _toy_saying(monkeypatch, **words)
    with pytest.raises(ValueError, match=refused):
        registry.check_words([*built_in, saying])
    # The same word in another field is no clash: a metric may be called as a kind is.
    field, members = next(iter(words.items()))
    if field == "kinds":
        registry.check_words([*built_in, _toy_saying(monkeypatch, metrics=members)])


def test_the_toy_lenss_offered_check_is_shown_for_each_release(monkeypatch):
    """Its check (``Lens.checks``) reaches releases.csv through the registry, as work's and
    operations' do: a row per release with the figure of its table's column."""
    monkeypatch.syspath_prepend(str(LENSES))
    from serverbench.lenses.releases.table import releases_table

    checks = registry.offered_checks(registry.lenses({"lenses": [TOY]}))
    (bytes_check,) = [check for check in checks if check.table == f"{TOY}.csv"]
    assert (bytes_check.name, bytes_check.title, bytes_check.unit) == ("bytes", "bytes / answer", "B")
    release = {"of": "toyserve", "package": "toyserve"}
    config = {"catalogue": {f"toyserve@{v}": {"release": {**release, "version": v}} for v in ("1.0", "2.0")}}
    servers = ["toyserve@1.0", "toyserve@2.0"]
    sizes = pd.DataFrame({"profile": "p", "server": servers, "status": "ok", "reason": None, "bytes": [120, 180]})
    table = releases_table(config, {}, checks, {f"{TOY}.csv": sizes}).set_index(["release", "check"])
    assert table.loc[("toyserve@2.0", "bytes"), ["value", "unit", "status"]].tolist() == [180, "B", "ok"]
    assert table.loc[("toyserve@1.0", "bytes"), "value"] == 120


def test_only_its_folder_wires_the_toy_lens():
    """Beside its folder and the interface's tests (this one, test_lens_settings), only the docs name it
    (as the example of a whole lens)."""
    found = subprocess.run(["git", "grep", "--untracked", "-l", TOY], cwd=REPO_ROOT, capture_output=True, text=True)
    named = [path for path in found.stdout.split() if not path.startswith("docs/")]
    own_tests = ("tests/test_lens.py", "tests/test_lens_settings.py")
    assert named and all(path.startswith(f"tests/lenses/{TOY}/") or path in own_tests for path in named), named


def test_the_core_wires_each_lens_job_by_its_rule(monkeypatch):
    """The one shim finds a lens's job by the rule the core named after it (workflow/rules/lenses.smk)."""
    monkeypatch.syspath_prepend(str(LENSES))
    config = {"lenses": [TOY]}
    lens, kind = registry.wired_job(config, TOY)
    assert (lens.name, kind) == (TOY, "measure")
    lens, kind = registry.wired_job(config, f"{TOY}_table")
    assert (lens.name, kind) == (TOY, "table")
    # advise's table rule keeps its own name; front's table and releases' rules are their own (rules.smk).
    assert registry.wired_job(config, "advice_table")[1] == "table"
    for own in ("front_table", "releases_table", "work_counted", "advise_table"):
        with pytest.raises(LookupError, match=own):
            registry.wired_job(config, own)


def test_the_toy_lens_without_rules_of_its_own_is_wired_by_the_core(tmp_path):
    """A dry run (nothing measured) plans the toy's job per server and its table job from its declaration."""
    results = tmp_path / "results"
    extra = tmp_path / "toy.yaml"
    extra.write_text(yaml.safe_dump({"lenses": [TOY]}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(LENSES), os.environ.get("PYTHONPATH")]))}
    matrix = ["servers=[gunicorn, starman]", "tools=[wrk]", "concurrency=[2]", "repeats=1", "duration=1"]
    options = ["-n", "--detailed-summary", "--configfile", "config.yaml", str(extra)]
    done = run_snakemake(options, [*matrix, f"results={results}"], timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    # The summary's columns: output file, date, rule, ...
    rows = [line.split("\t") for line in done.stdout.splitlines() if line.startswith(str(results))]
    made_by = {fields[0]: fields[2] for fields in rows}
    wired = {path.removeprefix(f"{results}/"): rule for path, rule in made_by.items() if TOY in rule}
    assert wired == {
        f"{TOY}/default/gunicorn.json": TOY,
        f"{TOY}/default/starman.json": TOY,
        f"{TOY}.csv": f"{TOY}_table",
        f"{TOY}_verdicts.csv": f"{TOY}_table",
    }


@pytest.mark.parametrize(
    "profile", ["default", "advise", "front", "operations", "recycle", "releases", "shutdown", "overload"]
)
def test_each_lens_asks_for_the_records_its_wired_rule_writes(profile):
    """A lens's jobs (LENS_RESULTS) are paths of its measuring job's record pattern, the output of
    the rule the core writes for it: a lens that said otherwise would leave rule all without a rule."""
    config = {**cfg.load(REPO_ROOT / "config.yaml", {"profile": profile}), "seed": 1}
    matrix = Matrix(config)
    asked = {}
    for lens in registry.lenses(config):
        if lens.measure_job is None:
            continue
        pattern = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(lens.measure_job.record))
        jobs = lens.jobs(config, matrix)
        assert [path for path in jobs if not re.fullmatch(pattern, path)] == [], lens.name
        asked[lens.name] = len(jobs)
    # The profile asks its own lens (the default asks the work lens), and so the check read paths.
    assert asked.get(profile if profile in asked else "work"), asked


@pytest.mark.e2e
def test_a_toy_lens_runs_through_the_workflow_to_its_table_verdicts_section_and_answers(tmp_path):
    require("gunicorn", "starman", "wrk")
    results = tmp_path / "results"
    extra = tmp_path / "toy.yaml"
    # Its own setting given in the profile (its schema's default is 3 answers a server).
    extra.write_text(
        yaml.safe_dump(
            {
                "lenses": [TOY],
                "comparisons": {"pairs": [["starman", "gunicorn"]]},
                "profiles": {"default": {TOY: {"answers": 2}}},
            }
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(LENSES), os.environ.get("PYTHONPATH")]))}
    matrix = ["servers=[gunicorn, starman]", "tools=[wrk]", "concurrency=[2]", "repeats=1", "duration=1"]
    done = run_snakemake(
        ["--cores", "4", "--configfile", "config.yaml", str(extra)],
        [*matrix, f"results={results}"],
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Its jobs, each through the session (verified, stopped), and its table.
    table = pd.read_csv(results / f"{TOY}.csv").set_index("server")
    assert set(table.index) == {"gunicorn", "starman"} and (table["status"] == "ok").all()
    assert (table["answers"] == 2).all()  # the profile's setting reached its job, typed
    assert (table["bytes"] > len("HTTP/1.1 200 OK\r\n\r\nHello World!")).all()
    # Its comparison by the one rule, in the vocabulary.
    judged = pd.read_csv(results / f"{TOY}_verdicts.csv")
    assert len(judged) == 1
    row = judged.iloc[0]
    ratio = table.loc["starman", "bytes"] / table.loc["gunicorn", "bytes"]
    assert row["ratio"] == pytest.approx(ratio)
    # An exact ratio against the toy's ±1%, the band of one run [1/1.01, 1.01], written by hand.
    assert row["margin"] == 0.01
    expected = Outcome.HIGHER if ratio > 1.01 else Outcome.LOWER if ratio < 1 / 1.01 else Outcome.EQUIVALENT
    assert Outcome(row["outcome"]) is expected
    # Its section of the page, its paragraph of answers.md, its console lines.
    page = (results / "index.html").read_text()
    section = page[page.index('<section id="toy-bytes">') :]
    assert f"starman sends {ratio:.3f}× the bytes of gunicorn per answer: {row['outcome']}" in section
    answers = (results / "answers.md").read_text()
    assert "## Bytes per answer" in answers and f"- gunicorn: {table.loc['gunicorn', 'bytes']:g} bytes" in answers
    assert "Bytes per answer:" in done.stdout
    # Printed as soon as its tables were made (rule answered), before the page and the run's
    # end, and kept as the text it printed.
    told = (results / "answers" / f"{TOY}.txt").read_text()
    assert told.strip().startswith("Bytes per answer:"), told
    answered = done.stdout.index(f"serverbench: the {TOY} lens has answered:{told}")
    assert answered < done.stdout.rindex("Bytes per answer:")  # the end's block, printed again
    # A progress line after each finished job, the last one with every job done.
    lines = [line for line in done.stderr.splitlines() if line.startswith("serverbench: ") and "jobs done" in line]
    assert lines and re.match(r"serverbench: (\d+) of \1 jobs done · finished ", lines[-1]), lines[-3:]
    assert any(" left, ends about " in line for line in lines), lines


def test_serverbench_list_reads_the_registry_and_the_config():
    """`serverbench list` names every lens with its question and what each profile runs."""
    done = subprocess.run(
        [sys.executable, "-m", "serverbench.cli", "list", "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [lens["name"] for lens in found["lenses"]] == [lens.name for lens in registry.lenses({})]
    assert all(lens["question"].endswith("?") for lens in found["lenses"])
    runs = {profile["name"]: profile["lenses"] for profile in found["profiles"]}
    assert runs["front"] == ["front", "work"] and runs["releases"] == ["releases", "operations", "work"]
    assert runs["advise"] == ["advise"] and runs["quick"] == [] and runs["recycle"] == ["recycle"]
    assert "instructions_per_request" in {check["name"] for check in found["checks"]}
    assert {"gunicorn", "starman"} <= {server["name"] for server in found["servers"]}
    listed = {server["name"]: server for server in found["servers"]}
    assert (listed["gunicorn"]["language"], listed["gunicorn"]["family"]) == ("python", "preforking")
    assert listed["gunicorn-gthread-again"]["compared_with"] == "gunicorn-gthread"
    assert (listed["gunicorn-gthread-plus5"]["compared_with"], listed["gunicorn-gthread-plus5"]["planted"]) == (
        "gunicorn-gthread",
        "slower",
    )
    assert listed["plackup+nginx"]["compared_with"] == "plackup" and listed["gunicorn"]["compared_with"] is None
    one = subprocess.run([sys.executable, "-m", "serverbench.cli", "list", "lenses"], capture_output=True, text=True)
    assert one.returncode == 0 and one.stdout.startswith("lenses (11):\n  http ")


def test_serverbench_plan_says_what_a_run_will_do_and_times_it_from_earlier_records(tmp_path):
    """`serverbench plan default`: the matrix's cells and rounds, the lenses with their jobs, and
    the time from records an earlier run here left (planted, so the sum is known): a cell's
    warm-up and duration plus what earlier cells took besides, a work job's median seconds."""
    cell = tmp_path / "cells" / "default" / "hello" / "wrk" / "starman" / "c2" / "r1.json"
    cell.parent.mkdir(parents=True)
    # 1.5 s besides measuring: a 4 s job, 0.5 s of warm-up and 2 s of load.
    timing = {"job_start": 0, "verify": 1, "warmup": 1, "load": 1.5, "stop": 3.5, "job_end": 4}
    cell.write_text(json.dumps({"timing": timing, "load": {"duration_s": 2.0}}))
    for number, seconds in enumerate((10, 12, 14)):
        work = tmp_path / "work" / "default" / "hello" / f"server{number}.json"
        work.parent.mkdir(parents=True, exist_ok=True)
        work.write_text(json.dumps({"seconds": seconds}))
    argv = [sys.executable, "-m", "serverbench.cli", "plan", "default", "--results", str(tmp_path), "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    config = cfg.load(REPO_ROOT / "config.yaml")
    assert plan["rounds"] == {"default": 5}
    assert plan["servers"] == sorted(config["profiles"]["default"]["servers"]) and plan["lenses"] == ["http", "work"]
    jobs = {job["name"]: job for job in plan["jobs"]}
    # config.yaml's default profile, by hand: 9 servers, 1 tool, 2 concurrencies, 5 rounds (90 cells),
    # each 0.5 s of warm-up and 2 s of load, plus the 1.5 s besides that the planted cell took.
    assert (plan["cells"], jobs["cells"]["jobs"], jobs["cells"]["seconds_each"]) == (90, 90, pytest.approx(4.0))
    assert (jobs["work lens"]["jobs"], jobs["work lens"]["seconds_each"]) == (9, 12)
    assert plan["unknown"] == ["http lens"]  # no earlier probe here: said, not guessed
    # 90 cells × 4 s, 9 work jobs × 12 s (their median), and the small jobs' allowance.
    expected = 90 * 4.0 + 9 * 12 + SMALL_JOBS_S
    assert plan["estimated_s"] == pytest.approx(expected, abs=0.1)
    # The default's precision may add rounds up to max_repeats (7), no round passing its measuring
    # budget (600 s), which the work jobs before the rounds count against, as the run counts them:
    # 2 rounds more of 18 cells × 4 s = 144 s, cut to the 600 − 90 × 4 − 9 × 12 = 132 s left.
    assert plan["most_s"] == pytest.approx(expected + 132, abs=0.1)
    assert plan["most_rounds"] == {"default": 7}
    shown = subprocess.run([*argv[:-1]], capture_output=True, text=True, timeout=120)
    assert "estimated: " in shown.stdout and "http lens not known here" in shown.stdout
    assert "default: up to 7 rounds, within its measuring budget of " in shown.stdout
    # What a finished run spent, kind by kind, from the same records (benchmarks/profile_times.py).
    assert preview.spent(tmp_path) == {"cells": 4.0, "work": 36.0}
    # and a cell's phases, each to the next stamp its record has (no warm-up here: verify's
    # stamp and warmup's are one).
    phases = {"setup": 1.0, "verify": 0.0, "warmup": 0.5, "load": 2.0, "stop": 0.5}
    assert preview.cell_phases(tmp_path) == phases


def test_serverbench_plan_counts_the_probes_before_a_profiles_rounds(tmp_path):
    """The http lens's probes run before a profile's rounds (its cells wait for them): known
    here, their seconds count against the measuring budget, as the work lens's do."""
    cell = tmp_path / "cells" / "default" / "hello" / "wrk" / "starman" / "c2" / "r1.json"
    cell.parent.mkdir(parents=True)
    timing = {"job_start": 0, "verify": 1, "warmup": 1, "load": 1.5, "stop": 3.5, "job_end": 4}
    cell.write_text(json.dumps({"timing": timing, "load": {"duration_s": 2.0}}))
    for folder, seconds in (("work/default/hello", 12), ("conformance/default", 6)):
        record = tmp_path / folder / "server.json"
        record.parent.mkdir(parents=True)
        record.write_text(json.dumps({"seconds": seconds}))
    argv = [sys.executable, "-m", "serverbench.cli", "plan", "default", "--results", str(tmp_path), "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert {job["name"]: job["jobs"] for job in plan["jobs"]}["http lens"] == 9
    # 90 cells × 4 s, 9 work jobs × 12 s, 9 probes × 6 s: of the 600 s budget, 78 s left for
    # the 2 rounds more precision may add (144 s).
    expected = 90 * 4.0 + 9 * 12 + 9 * 6 + SMALL_JOBS_S
    assert plan["estimated_s"] == pytest.approx(expected, abs=0.1)
    assert plan["most_s"] == pytest.approx(expected + 600 - 90 * 4 - 9 * 12 - 9 * 6, abs=0.1)


def test_the_core_writes_the_toy_lens_section_to_the_page_answers_and_the_console(tmp_path, monkeypatch):
    """The toy lens gives a typed section only; the core's three writers put it on the page, in
    answers.md and on the console, from its tables (written here as its rules would)."""
    monkeypatch.syspath_prepend(str(LENSES))
    from serverbench.report.index import write_index

    results = tmp_path / "results"
    results.mkdir()
    sizes = [{"profile": "p", "server": "gunicorn", "status": "ok", "reason": "", "bytes": 120.0},
             {"profile": "p", "server": "starman", "status": "ok", "reason": "", "bytes": 150.5}]  # fmt: skip
    pd.DataFrame(sizes).to_csv(results / f"{TOY}.csv", index=False)
    verdict = {"a": "starman", "b": "gunicorn", "ratio": 150.5 / 120, "outcome": "higher"}
    pd.DataFrame([verdict]).to_csv(results / f"{TOY}_verdicts.csv", index=False)
    config = {"lenses": [TOY], "work_lens": {"margin": 0.005}}
    stored = REPO_ROOT / "tests" / "data" / "records-v1"
    tables = sorted(results.glob("*.csv"))
    page, answers = tmp_path / "index.html", tmp_path / "answers.md"
    sections = registry.sections(config, tables, {})
    write_index(stored / "summary.csv", stored / "verdicts.csv", None, {}, page,
                answers_path=answers, sections=sections)  # fmt: skip
    said = "starman sends 1.254× the bytes of gunicorn per answer: higher"
    section = page.read_text()[page.read_text().index('<section id="toy-bytes">') :]
    assert "<h3>Bytes per answer</h3>" in section and f"<li>{said}</li>" in section
    assert "<li>gunicorn: 120 bytes</li>" in section
    assert f"## Bytes per answer\n\n- gunicorn: 120 bytes\n- starman: 150.5 bytes\n- {said}\n" in answers.read_text()
    assert registry.console_text(config, results, TOY) == f"\nBytes per answer:\n  - {said}\n"
