"""The recycle lens's tables (serverbench.lenses.recycle.table) on a planted record: every derived
column of recycle.csv, recycle_checks.csv and recycle_capacity.csv against its value worked out by
hand from the record's counts (the real servers' runs are tests/test_recycle.py's)."""

import json

import pandas as pd
import pytest
from serverbench.lenses.recycle.record import (
    RECYCLE_SCHEMA,
    CapacityLife,
    Client,
    RecycleResult,
    Restart,
    Run,
    Setting,
)
from serverbench.lenses.recycle.table import write_recycle
from serverbench.record.vocabulary import Status

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

PLANTED_LEAK = 4096  # bytes an answer


def restarts(*in_window: int) -> list[Restart]:
    """A worker leaving per entry, each with how many left within its window (itself included)."""
    return [Restart(pid=100 + i, at_s=float(i), failed=0, restarts_in_window=n) for i, n in enumerate(in_window)]


RUNS = (
    # The server's own setting, kept-alive clients: no restart, the leak measured, memory growing.
    Run(Setting(), Client.KEEPALIVE, load_s=5.0, answered=8000, dropped_reused=0, failed_between=0,
        leak_bytes_per_request=4300.0, peak_first_half_bytes=30_000_000, peak_second_half_bytes=62_456_789),
    # Its own setting with a connection per request: 3 restarts in 2500 answers, 3 failures near them.
    Run(Setting(), Client.FRESH, load_s=4.0, answered=2500, failed_by_kind={"reset": 2}, dropped_reused=1,
        failed_between=0, restarts=restarts(1, 2, 2), leak_bytes_per_request=3900.0),
    # A limit of 40: 7 failed, 3 kept-alive drops, 1 of the 10 away from any restart; 4 restarts.
    Run(Setting(40), Client.KEEPALIVE, load_s=5.0, answered=6000, failed_by_kind={"reset": 5, "timeout": 2},
        dropped_reused=3, failed_between=1, restarts=restarts(1, 3, 3, 1), ceiling_bytes=48_123_456),
    # 40 with jitter, fresh clients: 1 failure in 2 restarts.
    Run(Setting(40, 4), Client.FRESH, load_s=3.0, answered=3000, failed_by_kind={"reset": 1}, dropped_reused=0,
        failed_between=0, restarts=restarts(1, 1)),
    # A run that failed: its counts are in recycle.csv but no check counts them.
    Run(Setting(40), Client.FRESH, status=Status.FAILED, reason="the server exited", load_s=2.0, answered=100,
        failed_by_kind={"reset": 50}, dropped_reused=0, failed_between=0, restarts=restarts(1)),
)  # fmt: skip
CAPACITY = (
    CapacityLife(Setting(), life=1, met_rps=500.0, memory_bytes=123_456_789),
    CapacityLife(Setting(40), life=2, met_rps=400.0),
    CapacityLife(Setting(), life=3, met_rps=520.0),
    CapacityLife(Setting(40), life=4, met_rps=390.0),
)


@pytest.fixture
def tables(tmp_path):
    """The three tables written from the planted record, read back as the workflow writes them."""
    record = RecycleResult(
        schema=RECYCLE_SCHEMA, profile="recycle", server="drops", language="python", workload="leak",
        leaks_bytes=PLANTED_LEAK, recycle=None, runs=RUNS, capacity=CAPACITY,
    )  # fmt: skip
    path = tmp_path / "drops.json"
    path.write_text(json.dumps(record.to_dict()))
    names = ("recycle.csv", "recycle_checks.csv", "recycle_capacity.csv")
    write_recycle([path], *(tmp_path / name for name in names))
    return [pd.read_csv(tmp_path / name) for name in names]


def test_each_runs_derived_columns_are_its_counts_worked_out(tables):
    table = tables[0]
    derived = ["answers_per_s", "failed", "restarts", "restarts_per_10k", "failed_near_restarts",
               "failed_per_restart", "most_restarts_at_once", "leak_against_planted", "peak_first_half_mb",
               "peak_second_half_mb", "ceiling_mb"]  # fmt: skip
    nan = float("nan")
    expected = pd.DataFrame(
        [
            # 8000 / 5 s; nothing failed, nothing restarted; 4300 / 4096 B; 30e6 B and 62,456,789 B in MB.
            [1600.0, 0, 0, 0.0, nan, nan, nan, 1.0498, 30.0, 62.46, nan],
            # 2 + 1 failed, all near its 3 restarts: 3 / 3; 3 × 10^4 / 2500; 3900 / 4096.
            [625.0, 3, 3, 12.0, 3, 1.0, 2, 0.9521, nan, nan, nan],
            # 5 + 2 + 3 = 10 failed, 1 between: 9 near 4 restarts, 2.25 each; 4 × 10^4 / 6000 = 6.67.
            [1200.0, 10, 4, 6.67, 9, 2.25, 3, nan, nan, nan, 48.12],
            # 1 failed near 2 restarts; 2 × 10^4 / 3000.
            [1000.0, 1, 2, 6.67, 1, 0.5, 1, nan, nan, nan, nan],
            # The failed run, as counted: 50 near its 1 restart; 10^4 / 100.
            [50.0, 50, 1, 100.0, 50, 50.0, 1, nan, nan, nan, nan],
        ],
        columns=derived,
    )
    assert list(table["setting"]) == ["own", "own", "40", "40±4", "40"]
    pd.testing.assert_frame_equal(table[derived], expected, check_dtype=False)


def test_the_checks_offered_to_releases_are_the_set_runs_totals_and_the_own_runs_figures(tables):
    checks = tables[1].set_index("check")
    # The set limits' measured runs only: (9 + 1) failures near (4 + 2) restarts, not a mean of
    # their ratios (1.375), not the own setting's restarts, not the failed run's.
    assert checks.loc["recycle_failed_per_restart", "value"] == pytest.approx(10 / 6, abs=5e-4)
    # The median of the own setting's slopes, (4300 + 3900) / 2 B, × 10^4 answers, in MB.
    assert checks.loc["leak_mb_per_10k", "value"] == pytest.approx(41.0)
    # The own setting with fresh connections: 3 restarts in 2500 answers.
    assert checks.loc["own_restarts_per_10k", "value"] == pytest.approx(12.0)
    assert set(checks["status"]) == {"ok"}


def test_each_capacity_life_is_against_the_own_life_before_it(tables):
    capacity = tables[2]
    assert list(capacity["setting"]) == ["own", "40", "own", "40"]
    # 400 / 500 against the first own life, 390 / 520 against the second; own lives against none.
    assert capacity["against_own"].tolist() == pytest.approx([float("nan"), 0.8, float("nan"), 0.75], nan_ok=True)
    assert capacity["memory_mb"].iloc[0] == pytest.approx(123.46)
