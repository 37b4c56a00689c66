"""Repeats set by the spread, through the real workflow: a steady cell stops at
min_repeats, one whose repeats never agree goes on to max_repeats."""

import json

import pandas as pd
import pytest
import yaml
from conftest import require, run_snakemake

SINGLE = ["python", "{root}/tests/apps/single.py", "{port}"]


@pytest.mark.e2e
def test_a_steady_cell_stops_early_and_a_noisy_one_reaches_max_repeats(tmp_path):
    require("wrk")
    results = tmp_path / "results"
    extra = {
        "catalogue": {
            "steady": {"language": "python", "command": [*SINGLE, "faults:steady_10ms"]},
            "noisy": {
                "language": "python",
                "command": [*SINGLE, "faults:alternating"],
                "env": {"SERVERBENCH_TEST_COUNTER": str(tmp_path / "starts")},
            },
        },
        "profiles": {
            "adaptive": {
                "description": "precision-driven repeats",
                "servers": ["steady", "noisy"], "tools": ["wrk"], "concurrency": [10],
                "repeats": 2, "precision": 0.3, "min_repeats": 2, "max_repeats": 4,
                "duration": 1, "requests": 1000, "warmup": 0, "timeout": 5, "workers": 1, "threads": 1,
                "backlog": 64, "server_cpus": [0], "client_cpus": [1], "memory_limit": None,
                "ready_timeout": 15, "stop_grace": 3, "sample_interval": 0.1, "fairness": "off",
                "time_wait_max": 10**6,
            }
        },
    }  # fmt: skip
    configfile = tmp_path / "adaptive.yaml"
    configfile.write_text(yaml.safe_dump(extra))
    done = run_snakemake(
        # Only the table: the charts and the page are tested elsewhere.
        ["--cores", "4", str(results / "summary.csv"), "--configfile", "config.yaml", str(configfile)],
        ["profile=adaptive", f"results={results}"],
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = pd.read_csv(results / "summary.csv").set_index("server")
    assert summary.loc["steady", "repeats"] == 2 and bool(summary.loc["steady", "precision_met"])
    assert summary.loc["noisy", "repeats"] == 4 and not bool(summary.loc["noisy", "precision_met"])
    assert summary.loc["noisy", "precision_reached"] > 0.3
    decisions = results / "precision" / "adaptive" / "hello" / "wrk"
    assert json.loads((decisions / "steady" / "c10" / "n2.json").read_text())["more"] is False
    noisy = [json.loads((decisions / "noisy" / "c10" / f"n{n}.json").read_text()) for n in (2, 3, 4)]
    assert [d["more"] for d in noisy] == [True, True, False]
    assert not (decisions / "noisy" / "c10" / "n5.json").exists()
    # Each repeat was its own job, measured by its own server start.
    assert (tmp_path / "starts").read_text() == "4"
