"""Rounds set by the comparisons, through the real workflow: a profile whose
comparison is decided stops at min_repeats rounds; one whose comparison never
settles goes on, whole rounds at a time (two at once here, as on a cluster of
two nodes), to max_repeats."""

import json

import pandas as pd
import pytest
import yaml
from conftest import QUICK_PROFILE, require, run_snakemake
from serverbench import REPO_ROOT
from serverbench.decide.adaptive import measuring_so_far, needs_another_round
from serverbench.plan import config as cfg
from snakemake.utils import update_config

# Times what it tests against a figure measured beside it: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial

SINGLE = ["python", "{root}/tests/apps/single.py", "{port}"]
PROFILE = {
    **QUICK_PROFILE,
    "servers": [],
    "concurrency": [4],
    "repeats": 3,
    "precision": 0.10,
    "min_repeats": 3,
    "max_repeats": 5,
}


@pytest.mark.e2e
def test_a_decided_profile_stops_early_and_an_open_one_adds_whole_rounds(tmp_path):
    require("wrk")
    results = tmp_path / "results"
    # Each name counts its own starts and alternates out of step with the other, so every
    # round's ratio flips between 20 and 1/20 whatever order the run's seed gives the round.
    counter = {"SERVERBENCH_TEST_COUNTER": str(tmp_path / "starts-noisy")}
    twin = {"SERVERBENCH_TEST_COUNTER": str(tmp_path / "starts-again"), "SERVERBENCH_TEST_PHASE": "1"}
    extra = {
        "catalogue": {
            # Throughput set by sleeping: half as fast on any machine, so decided at once.
            "steady": {"language": "python", "command": [*SINGLE, "faults:steady_10ms"]},
            "steady-half": {"variant_of": "steady", "command": [*SINGLE, "faults:steady_20ms"]},
            # 5 ms or 100 ms per answer by start, the two names out of step: never settles.
            "noisy": {"language": "python", "command": [*SINGLE, "faults:alternating"], "env": counter},
            "noisy-again": {"alias_of": "noisy", "env": twin},
        },
        "profiles": {
            "settles": {**PROFILE, "description": "a decided comparison", "servers": ["steady", "steady-half"]},
            "never": {
                **PROFILE,
                "description": "an open comparison",
                "servers": ["noisy", "noisy-again"],
                "rounds_at_once": 2,
            },
        },
        "comparisons": {"ceiling": None, "best_of_language": False},
    }
    configfile = tmp_path / "adaptive.yaml"
    configfile.write_text(yaml.safe_dump(extra))
    done = run_snakemake(
        # Only the tables: the charts and the page are tested elsewhere.
        ["--cores", "4", str(results / "verdicts.csv"), "--configfile", "config.yaml", str(configfile)],
        ["profile=[settles,never]", f"results={results}"],
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(results / "summary.csv").set_index("server")
    assert summary.loc["steady", "repeats"] == 3 and summary.loc["steady-half", "repeats"] == 3
    assert summary.loc["noisy", "repeats"] == 5 and summary.loc["noisy-again", "repeats"] == 5
    decisions = results / "precision"
    settled = json.loads((decisions / "settles" / "n3.json").read_text())
    assert settled["more"] is False and settled["comparisons"][0]["outcome"] == "slower"
    assert settled["comparisons"][0]["kind"] == "variant" and settled["comparisons"][0]["state"] == "decided"
    # Rounds 4 and 5 were added at once: the next judgement came at 5, none at 4.
    never = [json.loads((decisions / "never" / f"n{n}.json").read_text()) for n in (3, 5)]
    assert [d["more"] for d in never] == [True, False]
    assert never[-1]["comparisons"][0]["kind"] == "A/A" and never[-1]["comparisons"][0]["state"] == "open"
    assert not (decisions / "never" / "n4.json").exists() and not (decisions / "never" / "n6.json").exists()
    # Each added round measured both servers, each by its own server start.
    assert (tmp_path / "starts-noisy").read_text() == (tmp_path / "starts-again").read_text() == "5"
    runs = pd.read_csv(results / "runs.csv")
    assert sorted(runs[runs["server"] == "noisy"]["repeat"]) == [1, 2, 3, 4, 5]
    # The same three rounds judged under a measuring budget they have used up: no round more.
    config = cfg.read(REPO_ROOT / "config.yaml")
    update_config(config, extra)
    config["profiles"]["never"]["measuring_budget"] = 1
    config = cfg.validate(config)
    first_three = sorted(str(p) for n in (1, 2, 3) for p in (results / "cells" / "never").rglob(f"r{n}.json"))
    assert len(first_three) == 6
    budgeted = needs_another_round(first_three, config, "never", 3)
    assert budgeted["more"] is False and budgeted["open"] == 1, budgeted["why"]
    assert "past its budget (1 s)" in budgeted["why"] and budgeted["measuring_s"] > 3


def test_the_measuring_so_far_counts_from_the_jobs_before_the_rounds(tmp_path):
    """From the first job's start (a work record's started_at) to the last cell's end; a
    round's time is the rounds' own span over their number."""

    def record(name, **fields):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(fields))
        return path

    cells = [
        record("r1a", timing={"job_start": 100.0, "job_end": 103.0}),
        record("r1b", timing={"job_start": 103.5, "job_end": 106.0}),
        record("r2a", timing={"job_start": 106.5, "job_end": 110.0}),
    ]
    work = record("work", started_at=40.0)
    assert measuring_so_far(cells, [work], 2) == (70.0, 5.0)
    assert measuring_so_far(cells, [], 2) == (10.0, 5.0)
    assert measuring_so_far([record("failed", timing={})], [work], 1) == (0.0, 0.0)
