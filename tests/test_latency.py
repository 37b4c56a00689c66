"""Latency under load through the real workflow: a capacity measured closed-loop,
then rate cells at fractions of it (oha, open loop), the knee, the chart.

The server is made to have a known capacity: gunicorn with one synchronous
worker on the apps' /sleep path (10 ms a request), so about 100 req/s on any
machine; beyond it the rate cannot be held and the queue (in the tool)
grows, whatever the machine's speed.
"""

import json
import math
import sys

import pandas as pd
import pytest
import yaml
from conftest import QUICK_PROFILE, require, run_snakemake, server_processes
from serverbench import REPO_ROOT
from serverbench.plan.rates import KneeBound, plan
from serverbench.record.model import load_record
from serverbench.report.index import write_index
from serverbench.tables.knees import knee

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import noise_simulation  # noqa: E402

# Times what it tests against a figure measured beside it: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial

FRACTIONS = [0.25, 0.75, 1.0, 1.25]
PROFILE = {
    "description": "a known capacity: one synchronous worker, 10 ms a request",
    **QUICK_PROFILE,
    "servers": ["gunicorn"],
    "workloads": ["sleep"],
    "fairness": "connections",
    "open_loop": {"tool": "oha", "fractions": FRACTIONS, "min_duration": 3, "max_duration": 3, "tail_samples": 1000},
}


@pytest.fixture(scope="module")
def latency_run(tmp_path_factory):
    """One run of the workflow with the profile above (shared by the tests of this module)."""
    require("wrk", "oha", "gunicorn")
    tmp_path = tmp_path_factory.mktemp("latency")
    results = tmp_path / "results"
    configfile = tmp_path / "latency.yaml"
    configfile.write_text(yaml.safe_dump({"profiles": {"knee": PROFILE}}))
    before = server_processes()
    # What this module checks; the other charts, the index page and its screenshots are e2e's.
    targets = [f"{results}/{name}" for name in ("latency.csv", "summary.csv", "verdicts.csv", "charts/load.png")]
    done = run_snakemake(
        ["--cores", "4", *targets, "--configfile", "config.yaml", str(configfile)],
        ["profile=knee", f"results={results}"],
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not server_processes() - before, "the run left server processes behind"
    return results


def knee_by_hand(latency: pd.DataFrame, multiple: float = 3.0, delta_ms: float = 1.0) -> float:
    """The knee as docs/latency.md defines it, worked out here from latency.csv for a p99 that
    rises with the rate (so its monotone fit is p99 itself): per fraction the median p99 of its ok
    repeats; beyond the bound, max(k × base, base + Δ) with base that p99 at the lowest fraction
    (the shipped k = 3, Δ = 1 ms), where p99 is above it, missing, or most repeats did not hold
    the rate; the knee is the fraction before the first one beyond whose next is beyond too (or
    which is the last), else the last."""
    points = []
    for _, repeats in latency.groupby("fraction", sort=True):
        ok = repeats[repeats["status"] == "ok"]
        not_held = sum("rate_not_held" in flags.split(";") for flags in ok["flags"].fillna(""))
        points.append((ok["latency_p99_ms"].median(), not_held > len(ok) / 2))
    bound = max(multiple * points[0][0], points[0][0] + delta_ms)
    beyond = [not_held or math.isnan(p99) or p99 > bound for p99, not_held in points]
    fractions = sorted(latency["fraction"].unique())
    for i in range(1, len(fractions)):
        if beyond[i] and (i == len(fractions) - 1 or beyond[i + 1]):
            return fractions[i - 1]
    return fractions[-1]


def rate_records(results):
    cells = results / "cells" / "knee" / "sleep" / "oha" / "gunicorn" / "c1"
    return {fraction: load_record(cells / f"f{fraction:g}" / "r1.json") for fraction in FRACTIONS}


@pytest.mark.e2e
def test_rate_cells_offer_fractions_of_the_measured_capacity(latency_run):
    capacity = json.loads((latency_run / "capacity" / "knee" / "sleep" / "gunicorn.json").read_text())
    assert capacity["status"] == "measured", capacity
    assert (capacity["tool"], capacity["concurrency"]) == ("wrk", 1)
    runs = pd.read_csv(latency_run / "runs.csv")
    assert capacity["rps"] == pytest.approx(runs["rps"].median())
    # One worker sleeping 10 ms a request over one connection, whatever the machine: no answer
    # comes sooner than 10 ms, and one connection at a time answers at most once per mean
    # latency (Little's law; its reconnections and the tool's own time only lower the rate).
    assert (runs["latency_mean_ms"] >= 10).all(), runs["latency_mean_ms"]
    assert (runs["rps"] <= 1000 / runs["latency_mean_ms"]).all(), runs[["rps", "latency_mean_ms"]]
    assert capacity["rps"] <= 100
    # Two repeats: no pair of order statistics covers 95% of a median, so no interval is claimed.
    assert capacity["repeats_ok"] == 2 and capacity["ci_low"] is None and capacity["ci_high"] is None
    for fraction, record in rate_records(latency_run).items():
        assert record.status == "ok", record.reason
        section = record.open_loop.to_dict()
        assert section["capacity_rps"] == capacity["rps"]
        assert section["offered_rps"] == pytest.approx(fraction * capacity["rps"], abs=1e-3)
        # The tool was really asked for that rate, for the planned time.
        argv = record.client.argv
        assert float(argv[argv.index("-q") + 1]) == pytest.approx(section["offered_rps"], rel=1e-5)
        assert argv[argv.index("-z") + 1] == "3s" and "--latency-correction" in argv
        assert record.load.latency_ms.p99_9 is not None
        # 1,000 answers above p99.9 would take 10^6 requests: the tail is thin, and said so.
        assert "thin_tail" in record.flags and section["above_p99_9"] < 1000
    latency = pd.read_csv(latency_run / "latency.csv")
    assert sorted(latency["fraction"]) == FRACTIONS
    assert set(latency["capacity_rps"]) == {capacity["rps"]}


@pytest.mark.e2e
def test_the_knee_lies_between_three_quarters_and_beyond_capacity(latency_run):
    records = rate_records(latency_run)
    latency = pd.read_csv(latency_run / "latency.csv")
    knee_fraction = knee_by_hand(latency)
    assert knee_fraction in (0.75, 1.0), latency
    bound = 3.0 * records[0.25].load.latency_ms.p99
    # Below capacity the rate is held and p99 stays near the 10 ms a request takes.
    for fraction in (0.25, 0.75):
        assert "rate_not_held" not in records[fraction].flags
        assert records[fraction].load.latency_ms.p99 <= bound
    # A quarter above capacity: the rate is not held, or p99 takes off (the queue grows).
    beyond = records[1.25]
    assert "rate_not_held" in beyond.flags or beyond.load.latency_ms.p99 > bound
    assert beyond.open_loop.achieved_share < 1.0
    summary = pd.read_csv(latency_run / "summary.csv")
    row = summary[summary["tool"] == "wrk"].iloc[0]
    assert row["knee_fraction"] == knee_fraction
    assert row["knee_rps"] == pytest.approx(knee_fraction * row["capacity_rps"])


@pytest.mark.e2e
def test_knee_chart_verdict_and_answers_are_written(latency_run, tmp_path):
    for ext in ("html", "png", "svg"):
        assert (latency_run / "charts" / f"load.{ext}").stat().st_size > 1000
    html = (latency_run / "charts" / "load.html").read_text()
    assert "offered requests/s" in html and "fraction of the server's own capacity" in html
    verdicts = pd.read_csv(latency_run / "verdicts.csv")
    knee_rows = verdicts[verdicts["kind"] == "knee"]
    assert list(knee_rows["a"]) == ["gunicorn"] and knee_rows["outcome"].iloc[0] == "measured"
    (tmp_path / "environment.json").write_text(json.dumps({"cpu_model": "test", "cpus": 2}))
    index = tmp_path / "index.html"
    write_index(latency_run / "summary.csv", latency_run / "verdicts.csv", tmp_path / "environment.json", {}, index)
    page = index.read_text()
    assert "<h3>Latency under load</h3>" in page and "gunicorn answers within its p99 bound up to" in page


def test_a_rate_cell_runs_long_enough_for_its_tail_within_bounds():
    measured = {"rps": 2000.0, "ci_low": 1900.0, "ci_high": 2100.0, "tool": "wrk", "concurrency": 2}
    spec = {"tail_samples": 1000, "min_duration": 5, "max_duration": 20}
    # 1,000 answers above p99.9 at 500 req/s would take 2,000 s: capped at 20.
    assert plan(measured, 0.25, spec)["duration_s"] == 20
    assert plan(measured, 0.25, {**spec, "tail_samples": 3})["duration_s"] == 6
    assert plan(measured, 0.25, {**spec, "tail_samples": 1})["duration_s"] == 5
    assert plan(measured, 0.25, spec)["offered_rps"] == 500.0
    assert math.isclose(plan(measured, 1.1, spec)["offered_rps"], 2200.0)


def test_the_knee_stops_where_p99_leaves_its_bound_for_good():
    def row(fraction, p99, flags="", status="ok"):
        return {
            "fraction": fraction,
            "status": status,
            "latency_p99_ms": p99,
            "flags": flags,
            "offered_rps": 100 * fraction,
            "capacity_rps": 100.0,
            "capacity_ci_low": 95.0,
            "capacity_ci_high": 105.0,
            "reason": None,
        }

    def found(rows, bound=None):
        return knee(pd.DataFrame(rows), bound or KneeBound(3.0, 0.0))

    crossed = found([row(0.25, 10), row(0.5, 12), row(0.75, 29), row(0.9, 31), row(1.0, 40)])
    assert (crossed["knee_fraction"], crossed["knee_rps"], crossed["knee_p99_ms"]) == (0.75, 75.0, 29)
    assert "p99 31 ms at 0.9" in crossed["knee_note"] and "max(3×, +0 ms)" in crossed["knee_note"]
    # One fraction above the bound with the next back under it is noise, not a knee.
    spike = found([row(0.25, 10), row(0.5, 12), row(0.75, 31), row(0.9, 12), row(1.0, 13)])
    assert spike["knee_fraction"] == 1.0 and "no knee in the range" in spike["knee_note"]
    # The bound is max(k × base, base + Δ): a 0.2 ms base does not make a knee of 0.7 ms.
    small = [row(0.25, 0.2), row(0.5, 0.7), row(0.75, 0.8), row(1.0, 0.9)]
    assert found(small)["knee_fraction"] == 0.25
    assert found(small, KneeBound(3.0, 1.0))["knee_fraction"] == 1.0
    held = found([row(0.25, 10), row(0.5, 11, flags="rate_not_held;thin_tail")])
    assert held["knee_fraction"] == 0.25 and "rate was not held at 0.5" in held["knee_note"]
    # Three repeats at 0.5, one of them hit by a stall: the median p99 and the majority decide.
    stalled = [row(0.25, 10), row(0.5, 11), row(0.5, 900, flags="rate_not_held"), row(0.5, 12)]
    assert found(stalled)["knee_fraction"] == 0.5
    failed = found([row(0.25, None, status="failed")])
    assert failed["knee_fraction"] is None and "no latency at the lowest fraction" in failed["knee_note"]


def test_the_knee_interval_holds_a_planted_knee():
    """A short version of benchmarks/noise_simulation.py's planted knee (fixed seeds)."""
    coverage = noise_simulation.knee_coverage(cases=60, seed=3)
    assert coverage["covered"] >= 0.9 and coverage["found"] == 1.0, coverage
