"""The real workflow on a tiny matrix, through the snakemake CLI (which loads
the workflow profile): every output exists, jobs never overlapped, nothing
is left running."""

import json
import os
import re
import subprocess
import sys
import zipfile

import pandas as pd
import pytest
from conftest import TINY_MATRIX, require, run_snakemake, server_processes
from serverbench import REPO_ROOT
from serverbench.cell import parsers
from serverbench.decide.verdicts import read_verdicts
from serverbench.report import screenshots
from serverbench.report.names import CHARTS

pytestmark = pytest.mark.e2e
# Every snakemake call on the tiny run takes the same config, or the rerun would find params changed.
SHORT_LIVES = ["--configfile", "config.yaml", str(REPO_ROOT / "tests/data/short-work-lives.yaml")]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    require("gunicorn", "starman", "wrk")
    results = tmp_path_factory.mktemp("e2e") / "results"
    before = server_processes()
    done = run_snakemake(
        ["--cores", "4", *SHORT_LIVES],
        [*TINY_MATRIX, f"results={results}"],
        timeout=900,
        host_check=True,
        conformance=True,
        work=True,
        screenshots=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return results, done, server_processes() - before


def test_every_output_exists(tiny_run):
    results, _, _ = tiny_run
    outputs = ("runs.csv", "summary.csv", "conformance.csv", "index.html", "environment.json", "charts/rps.html")
    for name in (*outputs, "charts/rps.png"):
        assert (results / name).stat().st_size > 0, name
    cells = sorted((results / "cells").rglob("r*.json"))
    assert len(cells) == 4
    for path in cells:
        record = json.loads(path.read_text())
        assert record["status"] == "ok", record["reason"]
        # Every figure traces to the raw output beside it.
        raw = (path.parent / f"{path.stem}.load.txt").read_text()
        assert parsers.parse("wrk", raw)["requests"] == record["load"]["requests"] > 0
        assert record["raw"] == {"load": f"{path.stem}.load.txt", "server_log": f"{path.stem}.server.log"}
        log = (path.parent / f"{path.stem}.server.log").read_text()
        assert str(record["server"]["port"]) in log, log[-500:]


def test_tables(tiny_run):
    results, _, _ = tiny_run
    runs = pd.read_csv(results / "runs.csv")
    summary = pd.read_csv(results / "summary.csv")
    assert len(runs) == 4 and set(runs["status"]) == {"ok"}
    # Every cell names the machine it ran on (no scheduler placed it: no job id).
    assert runs["host_name"].notna().all() and runs["host_boot_id"].nunique() == 1
    assert runs["host_cpu_model"].notna().all() and runs["scheduler_job"].isna().all()
    assert sorted(summary["server"]) == ["gunicorn", "starman"]
    assert set(summary["language"]) == {"python", "perl"}
    # Two repeats: nothing trimmed, the estimate is their mean and the band their extremes.
    per_cell = runs.groupby("server")["rps"]
    summary = summary.set_index("server")
    assert (summary["repeats_ok"] == 2).all()
    assert summary["rps_trimmed_mean"].to_dict() == pytest.approx(per_cell.mean().to_dict())
    assert summary["rps_min"].to_dict() == per_cell.min().to_dict()
    assert summary["rps_max"].to_dict() == per_cell.max().to_dict()


def test_chart_is_self_contained_and_index_links_it(tiny_run):
    results, _, _ = tiny_run
    html = (results / "charts" / "rps.html").read_text()
    assert "vega-lite" in html.lower()
    assert "cdn.jsdelivr" not in html and "<script src=" not in html
    assert (results / "charts" / "rps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    index = (results / "index.html").read_text()
    assert "charts/rps.html" in index and "gunicorn" in index and "starman" in index


def test_each_server_was_probed_before_its_cells(tiny_run):
    results, _, _ = tiny_run
    conformance = pd.read_csv(results / "conformance.csv")
    assert set(conformance["server"]) == {"gunicorn", "starman"}
    assert set(conformance["outcome"]) <= {"pass", "warn", "fail", "info"}
    runs = pd.read_csv(results / "runs.csv")
    for server in ("gunicorn", "starman"):
        probed = json.loads((results / "conformance" / "default" / f"{server}.json").read_text())
        assert probed["status"] == "ok", probed["reason"]
        assert probed["ended_at"] <= runs.loc[runs["server"] == server, "job_start"].min()
    index = (results / "index.html").read_text()
    assert "Does it speak HTTP?" in index and 'class="conformance"' in index


def test_bench_jobs_never_overlap(tiny_run):
    """Cells and work counts one at a time (profiles/default); only two servers' probes may
    run side by side, each with the other and nothing else."""
    results, _, _ = tiny_run
    runs = pd.read_csv(results / "runs.csv")
    spans = [("cell", start, end) for start, end in zip(runs["job_start"], runs["job_end"], strict=True)]
    for kind, pattern in (("work", "*/*/*.json"), ("conformance", "*/*.json")):
        for path in (results / kind).glob(pattern):
            record = json.loads(path.read_text())
            spans.append((kind, record["started_at"], record["ended_at"]))
    assert {kind for kind, _, _ in spans} == {"cell", "work", "conformance"}
    spans.sort(key=lambda span: span[1])
    for index, (kind, start, end) in enumerate(spans):
        for other, other_start, _ in spans[index + 1 :]:
            if other_start < end:
                assert kind == other == "conformance", f"{other} began at {other_start}, in {kind} {start}-{end}"


def test_the_machines_steadiness_was_checked_on_every_cpu_before_any_cell(tiny_run):
    results, _, _ = tiny_run
    check = json.loads((results / "environment.json").read_text())["host_speed"]
    assert sorted(map(int, check["cpus"])) == sorted(os.sched_getaffinity(0))
    assert all(cpu["chunks"] > 100 for cpu in check["cpus"].values())
    # It ran first, so alone: after it the cells, and the tables and charts only after them.
    assert check["ended_at"] <= pd.read_csv(results / "runs.csv")["job_start"].min()
    assert 'id="machine"' in (results / "index.html").read_text()


def test_cells_ran_in_the_seeded_order(tiny_run):
    results, _, _ = tiny_run
    runs = pd.read_csv(results / "runs.csv").sort_values("job_start")
    records = [
        json.loads(
            (
                results / "cells" / f"{r.profile}/{r.workload}/{r.tool}/{r.server}/c{r.concurrency}/r{r.repeat}.json"
            ).read_text()
        )
        for r in runs.itertuples()
    ]
    assert [r["order"]["position"] for r in records] == [1, 2, 3, 4]


def test_verdicts_and_answers(tiny_run):
    """gunicorn (Python) and Starman (Perl) are one family; Starman's 2 workers starve 8 of
    the 10 kept-alive connections, so the pair decides nothing and says why."""
    results, done, _ = tiny_run
    verdicts = pd.read_csv(results / "verdicts.csv")
    family = verdicts[verdicts["kind"] == "family"].iloc[0]
    assert (family["a"], family["b"]) == ("gunicorn", "starman")
    assert family["outcome"] == "not comparable" and "starman: starved" in family["why"]
    assert family["sentence"].startswith("Under wrk at 10 connections")
    assert "comparisons (" in done.stdout + done.stderr  # the table printed when the workflow finished
    index = (results / "index.html").read_text()
    assert index.index("<h2>Answers</h2>") < index.index('class="chart"') < index.index('id="comparisons"')
    # Not-comparable reasons are grouped on the page: one line per reason, naming the comparisons it stopped.
    assert re.search(r"<li>starman: starved: [^<]*: gunicorn against starman \(wrk, c=10\)</li>", index)


def test_every_server_has_the_request_framing_checks_with_the_rfcs_words(tiny_run):
    results, _, _ = tiny_run
    conformance = pd.read_csv(results / "conformance.csv")
    framing = conformance[conformance["group"] == "request framing"]
    assert framing.groupby("server")["check"].nunique().to_dict() == {"gunicorn": 23, "starman": 23}
    assert framing["note"].str.contains(r"\. RFC 911[02] \d", regex=True).all()
    assert set(framing["requirement"]) == {"MUST", "SHOULD", "MAY"}
    index = (results / "index.html").read_text()
    assert 'id="request-framing"' in index and "MUSTs of RFC 9112/9110 on request framing" in index
    assert "The cells ran on 1 host: " in index


def test_work_per_request_is_counted_judged_and_shown(tiny_run):
    """The work lens ran for both servers: figures in work.csv, gunicorn (Python) against
    Starman (Perl) judged on work in work_verdicts.csv, a section on the page and in
    answers.md, and the page's sentence beside the timed lens's word."""
    results, _, _ = tiny_run
    work = pd.read_csv(results / "work.csv").set_index("server")
    assert list(work["status"]) == ["ok", "ok"], list(work["reason"])
    assert (work["instructions_per_request"] > 10_000).all() and (work["syscalls_per_request"] >= 2).all()
    judged = pd.read_csv(results / "work_verdicts.csv")
    (family,) = judged[judged["kind"] == "family"].itertuples()
    # gunicorn's Python does far more per hello than Starman's Perl (about 2x here, counted,
    # not timed): the interval lies wholly above the band, whatever the machine's speed.
    assert family.metric == "work" and family.outcome == "more work", family
    assert family.ci_low > 1 + family.margin and family.ratio > 1.2, family
    # The timed lens beside: the same pair's own verdict in verdicts.csv, as it is there.
    timed = read_verdicts(results / "verdicts.csv")
    timed = timed[(timed["a"] == family.a) & (timed["b"] == family.b) & (timed["workload"] == family.workload)]
    assert family.timed_at == "wrk c=10" and set(zip(timed["tool"], timed["concurrency"], strict=True)) == {("wrk", 10)}
    assert family.timed_outcome == timed["outcome"].iloc[0]
    assert family.timed_ratio == pytest.approx(timed["ratio"].iloc[0], nan_ok=True)  # none where not comparable
    index = (results / "index.html").read_text()
    assert 'id="work"' in index and "user-space instructions per request" in index
    answers = (results / "answers.md").read_text()
    assert "## Work per request" in answers and "It is not speed" in answers


def test_page_reads_on_a_phone_and_a_laptop(tiny_run):
    """The run's own page in a real browser, as the workflow checked it (screenshots/layout.json)
    and again here: at 390 and 1,280 px no wider than the window, every chart drawn, the forest
    plot whole inside the window, no blank band, no console error."""
    require("chromium")
    results, _, _ = tiny_run
    checked = json.loads((results / "screenshots" / "layout.json").read_text())
    assert {name: found["viewport"] for name, found in checked.items()} == {
        "desktop": 1280,
        "narrow": 500,
        "phone": 390,
    }
    assert {name: found["problems"] for name, found in checked.items()} == {"desktop": [], "narrow": [], "phone": []}
    # Scrolled as far right as it goes, the page stays where it is, at every width.
    assert {name: found["scroll_x"] for name, found in checked.items()} == {"desktop": 0, "narrow": 0, "phone": 0}
    forest = screenshots.layout(results / "index.html", 390)
    assert screenshots.layout_problems(forest, CHARTS["forest"]) == []
    assert len(forest["charts"]) == len(CHARTS) and forest["charts"][0]["title"] == CHARTS["forest"]


def test_report_packs_the_run(tiny_run, tmp_path):
    results, _, _ = tiny_run
    report = tmp_path / "report.zip"
    done = run_snakemake(
        ["--report", str(report), *SHORT_LIVES],
        [*TINY_MATRIX, f"results={results}"],
        timeout=600,
        host_check=True,
        conformance=True,
        work=True,
        screenshots=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with zipfile.ZipFile(report) as packed:
        names = packed.namelist()
    assert any(name.endswith("report.html") for name in names)
    assert any(name.endswith("verdicts.csv") for name in names) and any(name.endswith("rps.png") for name in names)


def test_no_server_process_left(tiny_run):
    _, _, left = tiny_run
    assert not left


def test_rerun_has_nothing_to_do(tiny_run):
    results, _, _ = tiny_run
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "4",
            "-n",
            *SHORT_LIVES,
            "--config",
            "servers=[gunicorn, starman]",
            "tools=[wrk]",
            "concurrency=[10]",
            "repeats=2",
            "duration=1",
            f"results={results}",
            "work=True",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0
    assert "Nothing to be done" in done.stdout + done.stderr
