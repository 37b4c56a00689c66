"""Every flag and summary figure on real records (tests/data/records-v1): each
made to fire by changing the one figure it judges, and silent otherwise.
Thresholds come from the shipped config.yaml."""

import copy
from dataclasses import replace

import pandas as pd
import pytest
from conftest import RECORDS_V1
from serverbench import REPO_ROOT
from serverbench.plan import config as cfg
from serverbench.record import flags
from serverbench.record.model import RECORD_SCHEMA, load_record
from serverbench.record.sections import Checks, Fairness, LittlesLaw
from serverbench.tables import summary as summary_table
from serverbench.tables.columns import AVERAGED_COLUMNS, CONTEXT_COLUMNS

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

THRESHOLDS = cfg.load(REPO_ROOT / "config.yaml")["flags"]


@pytest.fixture
def record():
    """uWSGI --http11-socket with 2 workers at 10 connections: starved, nothing else."""
    base = load_record(RECORDS_V1 / "cells/default/hello/wrk/uwsgi/c10/r1.json")
    assert flags.cell_flags(base, THRESHOLDS) == ["starved"]
    base = replace(base, fairness=Fairness(status="ok", method="connections", min_over_mean=0.8, starved_connections=0))
    assert flags.cell_flags(base, THRESHOLDS) == []
    return base


def flagged(record):
    return flags.cell_flags(record, THRESHOLDS)


def test_errors_fire_above_the_threshold_only(record):
    record.load.error_rate = THRESHOLDS["error_rate"]
    assert "errors" not in flagged(record)
    record.load.error_rate = THRESHOLDS["error_rate"] * 1.01
    assert "errors" in flagged(record)


def test_non_2xx(record):
    record.load.errors.non_2xx = 1
    assert "non_2xx" in flagged(record)


def test_timeouts_and_an_unobservable_timeout_class(record):
    record.load.errors.timeout = None  # ab cannot count them: no flag, no crash
    assert "timeouts" not in flagged(record)
    record.load.errors.timeout = 3
    assert "timeouts" in flagged(record)


def test_keepalive_broken(record):
    record.load.errors.read = int(0.89 * record.load.requests)
    assert "keepalive_broken" not in flagged(record)
    record.load.errors.read = record.load.requests
    assert "keepalive_broken" in flagged(record)


def test_stalled_when_fewer_answers_than_connections(record):
    record.load.requests = record.cell.concurrency
    assert "stalled" not in flagged(record)
    record.load.requests = record.cell.concurrency - 1
    assert "stalled" in flagged(record)


def test_tool_exit(record):
    record.client.exit_code = 1
    assert "tool_exit" in flagged(record)


def test_client_bound_against_the_allotment(record):
    record.client.cpu_percent = 89.0
    assert "client_bound" not in flagged(record)
    record.client.cpu_percent = 90.0
    assert "client_bound" in flagged(record)
    record.client.cpu_percent, record.client.cpu_quota = 24.0, 0.25  # a quarter CPU, nearly all used
    assert "client_bound" in flagged(record)


def test_the_runs_ceiling_measures_the_client_too_so_it_is_not_client_bound(record):
    record.client.cpu_percent = 95.0
    assert "client_bound" in flags.cell_flags(record, THRESHOLDS, ceiling="nginx-baseline")
    assert "client_bound" not in flags.cell_flags(record, THRESHOLDS, ceiling=record.cell.server)
    assert "server_idle" not in flags.cell_flags(record, THRESHOLDS, ceiling=record.cell.server)


def test_server_idle_unless_the_client_is_the_limit(record):
    record.server.usage.cpu_percent_of_allotment = 24.0
    assert "server_idle" in flagged(record)
    record.client.cpu_percent = 95.0
    assert "server_idle" not in flagged(record) and "client_bound" in flagged(record)


def test_starved_needs_a_starved_connection(record):
    record = replace(record, fairness=Fairness(status="ok", min_over_mean=0.05, starved_connections=1))
    assert "starved" in flagged(record)
    record = replace(record, fairness=Fairness(status="ok", min_over_mean=0.05, starved_connections=0))
    assert "starved" not in flagged(record)
    # h2load gives no count
    record = replace(record, fairness=Fairness(status="ok", method="h2load", min_over_mean=0.05))
    assert "starved" in flagged(record)


def test_no_traffic_is_not_starvation(record):
    record = replace(record, fairness=Fairness(status="no traffic", reason="no connection received a byte in 2.00 s"))
    assert "no_traffic" in flagged(record) and "starved" not in flagged(record)


def test_backlog_small_judges_the_backlog_the_server_listens_with(record):
    record.limits.listen_backlog = record.limits.effective_backlog = 5
    assert "backlog_small" in flagged(record)
    record.limits.listen_backlog = record.limits.effective_backlog = 4096
    assert "backlog_small" not in flagged(record)


def test_a_server_process_killed_for_memory_flags_the_figure(record):
    assert record.server.oom_kills in (None, 0) and "oom_killed" not in flagged(record)
    record.server.oom_kills = 1
    assert "oom_killed" in flagged(record)


def test_a_failed_cell_has_no_flags(record):
    record = replace(record, status="failed")
    record.load.errors.non_2xx = 10
    assert flagged(record) == []


# The summary: trimmed mean, the spread of what it keeps, unstable, single_repeat.


def runs(*rps):
    rows = [
        {
            "profile": "p",
            "workload": "hello",
            "tool": "wrk",
            "server": "s",
            "language": "python",
            "concurrency": 10,
            "repeat": i,
            "status": "ok",
            "reason": None,
            "rps": value,
            "flags": "",
        }
        for i, value in enumerate(rps, start=1)
    ]
    frame = pd.DataFrame(rows)
    for column in AVERAGED_COLUMNS + CONTEXT_COLUMNS:
        frame[column] = None
    return frame


def summary(*rps):
    return summary_table.summarise(runs(*rps), THRESHOLDS).iloc[0]


def test_trimmed_mean_drops_best_and_worst_from_four_repeats():
    assert summary_table.trimmed_mean([100, 1, 10, 12]) == 11
    assert summary_table.trimmed_mean([1, 10, 12]) == pytest.approx(23 / 3)
    assert summary_table.trimmed_mean([]) is None


def test_the_spread_is_that_of_every_repeat_and_only_informs():
    row = summary(1000, 1000, 1010, 5000)  # the trimmed mean drops the outlier; the spread keeps it
    assert row["rps_trimmed_mean"] == 1005
    assert row["rps_cv"] == pytest.approx(summary_table.spread([1000, 1000, 1010, 5000]))
    deciding = cfg.load(REPO_ROOT / "config.yaml")["comparisons"]["not_comparable_flags"]
    assert "unstable" in row["flags"] and "unstable" not in deciding
    assert row["rps_max"] == 5000  # the band still shows every repeat


def test_unstable_fires_on_the_spread():
    assert "unstable" in summary(1000, 1300, 1600, 1900)["flags"]
    assert "unstable" not in summary(1000, 1010, 1020)["flags"]


def test_one_repeat_says_its_spread_is_unknown():
    row = summary(1000)
    assert pd.isna(row["rps_cv"]) and row["flags"] == "single_repeat"
    assert "single_repeat" not in summary(1000, 1001)["flags"]


def test_records_keep_their_thresholds(tmp_path, base_config, no_leftovers):
    from conftest import measure_cell, require

    require("gunicorn", "wrk")
    config = copy.deepcopy(base_config)
    record = measure_cell(config, tmp_path)
    assert record["thresholds"] == config["flags"]
    assert record["schema"] == RECORD_SCHEMA


def with_littles_law(record, ratio: float, corrected: bool):
    """The record with another Little's-law check (req/s × mean latency against the connections)."""
    return replace(record, checks=Checks(littles_law=LittlesLaw(ratio=ratio, mean_latency_corrected_by_tool=corrected)))


def test_littles_law_shortfall_fires_and_wrks_corrected_excess_does_not(record):
    record = with_littles_law(record, 0.2, corrected=True)
    assert "littles_law" in flagged(record)
    record = with_littles_law(record, 5.4, corrected=True)
    assert "littles_law" not in flagged(record)
    record = with_littles_law(record, 1.6, corrected=False)
    assert "littles_law" in flagged(record)
    record = with_littles_law(record, 0.95, corrected=False)
    assert "littles_law" not in flagged(record)


def test_a_saturated_clients_shortfall_is_its_own_time_not_uncounted_requests(record):
    record = with_littles_law(record, 0.6, corrected=True)
    record.client.cpu_percent = 100 * THRESHOLDS["client_bound_share"] - 1
    assert "littles_law" in flagged(record)
    record.client.cpu_percent = 100 * THRESHOLDS["client_bound_share"]
    assert "littles_law" not in flagged(record) and "client_bound" in flagged(record)


def test_cpu_contended_fires_above_the_share_only(record):
    record.server.usage.foreign_cpu_share = THRESHOLDS["foreign_cpu_share"]
    assert "cpu_contended" not in flagged(record)
    record.server.usage.foreign_cpu_share = THRESHOLDS["foreign_cpu_share"] + 0.01
    assert "cpu_contended" in flagged(record)
