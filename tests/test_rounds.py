"""Rounds through the real workflow, with real processes and no speed assumption:
one server as two variants in one run, one held to 80% of the other's CPU time by
a cgroup quota, and the same server again under a second name (an A/A pair).

The server spends a fixed amount of CPU *time* per answer (``faults:spin_5ms_cpu``),
so its throughput is set by the CPU time it may have, on a fast or a slowed CPU
alike: the quota makes the variant about 0.8 times as fast (exactly: the ratio of
the CPU time each was given, which the run measures).
"""

import json

import pandas as pd
import pytest
import yaml
from conftest import QUICK_PROFILE, missing, require, run_snakemake
from serverbench.host.cgroups import cgroup_version
from serverbench.record.model import load_record

# Times what it tests against a figure measured beside it: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial

SINGLE = ["python", "{root}/tests/apps/single.py", "{port}", "faults:spin_5ms_cpu"]
ROUNDS = 7


@pytest.fixture(scope="module")
def variants_run(tmp_path_factory):
    require("wrk")
    if cgroup_version() is None:
        missing("no writable cgroup hierarchy (root and /sys/fs/cgroup needed): a CPU quota cannot be set")
    tmp_path = tmp_path_factory.mktemp("rounds")
    results = tmp_path / "results"
    extra = {
        "catalogue": {
            "spinner": {"language": "python", "command": SINGLE},
            "spinner-at-80": {"variant_of": "spinner", "cpu_quota": 0.8, "description": "80% of one CPU's time"},
            "spinner-again": {"alias_of": "spinner"},
        },
        "profiles": {
            "variants": {
                "description": "a planted regression and an A/A control, interleaved by rounds",
                **QUICK_PROFILE,
                "servers": ["spinner", "spinner-at-80", "spinner-again"],
                "repeats": ROUNDS,
            }
        },
        "comparisons": {"ceiling": None, "best_of_language": False},
    }
    configfile = tmp_path / "variants.yaml"
    configfile.write_text(yaml.safe_dump(extra))
    done = run_snakemake(
        [
            "--cores",
            "4",
            *(str(results / name) for name in ("verdicts.csv", "environment.json")),
            "--configfile",
            "config.yaml",
            str(configfile),
        ],
        ["profile=variants", f"results={results}"],
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return results


def verdict(results, kind: str) -> pd.Series:
    verdicts = pd.read_csv(results / "verdicts.csv")
    rows = verdicts[verdicts["kind"] == kind]
    assert len(rows) == 1, verdicts[["kind", "a", "b"]]
    return rows.iloc[0]


@pytest.mark.e2e
def test_a_variant_held_to_80_percent_is_found_slower(variants_run):
    row = verdict(variants_run, "variant")
    assert (row["a"], row["b"]) == ("spinner-at-80", "spinner")
    assert row["method"] == "rounds model" and row["n_a"] == ROUNDS
    assert row["outcome"] == "slower", row["sentence"]
    # The true ratio is the share of CPU time each got: the quota holds the variant to 0.8 of a
    # CPU, and the original, waiting on its client between answers, uses a little less than 1.
    cpu = pd.read_csv(variants_run / "runs.csv").groupby("server")["server_cpu_percent"].median()
    assert cpu["spinner-at-80"] <= 80 * 1.03
    truth = cpu["spinner-at-80"] / cpu["spinner"]
    assert row["ci_low"] <= truth * 1.03 and truth * 0.97 <= row["ci_high"], (truth, row["sentence"])
    assert row["detectable_ratio"] > 1


@pytest.mark.e2e
def test_the_same_server_twice_is_never_faster_or_slower(variants_run):
    row = verdict(variants_run, "A/A")
    assert (row["a"], row["b"]) == ("spinner-again", "spinner")
    assert row["outcome"] in ("equivalent", "undetermined"), row["sentence"]
    # Neither the interval holding 1 nor the estimate near it is promised: the interval misses 1 in
    # a share of runs by construction (1.0006 at its low end in one make test), and on a host whose
    # CPUs slow in episodes the estimate of seven rounds wandered to 0.95 (CI 0.89-1.02) in CI.
    # The promise is the verdict's: the interval reaches into the margin, never wholly beyond it.
    assert row["ci_low"] <= 1 + row["margin"] and 1 / (1 + row["margin"]) <= row["ci_high"], row["sentence"]


@pytest.mark.e2e
def test_every_record_carries_its_round_and_the_runs_seed(variants_run):
    records = [load_record(path) for path in sorted((variants_run / "cells").rglob("r*.json"))]
    assert len(records) == 3 * ROUNDS
    seeds = {record.order.seed for record in records}
    assert len(seeds) == 1 and None not in seeds
    assert json.loads((variants_run / "environment.json").read_text())["seed"] in seeds
    assert all(record.order.round == record.cell.repeat for record in records)
    # Round r's cells ran before round r + 1's, each round in its own order.
    by_position = sorted(records, key=lambda record: record.order.position)
    assert [record.order.round for record in by_position] == sorted(record.order.round for record in records)
    orders = {tuple(r.cell.server for r in by_position if r.order.round == n) for n in range(1, ROUNDS + 1)}
    assert len(orders) > 1
    throttled = [r for r in records if r.cell.server == "spinner-at-80"]
    assert all(r.isolation.cpu_quota == 0.8 for r in throttled)
