"""The seed studies as data (seeds/studies.yaml): read exactly, checked against the
seeds' own texts, their claims judged by their own figures, and set beside a run."""

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import measure_cell, require
from serverbench.cell.windows import windows
from serverbench.decide import seeds as side
from serverbench.plan import seeds as seed_data
from serverbench.record.sections import LoadResult

# Times what it tests against a figure measured beside it: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def studies():
    """The seed data as the repository holds them (seeds/studies.yaml): their figures, tables and
    claims are data, read with or without the seeds' texts."""
    return seed_data.load()


@pytest.fixture(scope="module")
def located(studies):
    """The seed data with every figure's line found in its seed's text (the texts are beside the
    clone, ../shared/seeds, where there are any)."""
    if not studies.located:
        pytest.skip(f"the seeds' texts are needed to check the quotes: {studies.problems[0]}")
    return studies


def figure(studies, seed, table, server, metric):
    rows = studies.figures
    row = rows[(rows.seed == seed) & (rows.table == table) & (rows.server == server) & (rows.metric == metric)]
    assert len(row) == 1, (seed, table, server, metric)
    return row.iloc[0]


def test_every_figure_stands_on_a_line_of_its_seed(located):
    studies = located
    assert studies.figures["line"].notna().all()
    lines = {s: (studies.source_dir / d["file"]).read_text().splitlines() for s, d in studies.studies.items()}
    for row in studies.figures.itertuples():
        assert row.quote in lines[row.seed][row.line - 1], row
    # Every column the seeds state a figure with.
    assert set(seed_data.FIGURE_COLUMNS) <= set(studies.figures.columns)
    assert {"rps", "latency_mean", "errors_read", "time_per_request", "memory", "error_rate"} <= set(
        studies.figures["metric"]
    )


def test_seed_001_high_spec_is_recorded_as_labelled(studies):
    """By heading and port, Unit (:5001) made 1,694.14 req/s and uWSGI 2,573.82: the
    figures are kept as labelled, and uWSGI's read errors outnumber its requests (every
    answer closed its connection, which wrk counts as a read error)."""
    unit = figure(studies, "001", "high", "Unit", "rps")
    assert (
        unit.number == 1694.14
        and unit.catalogue == "unit-perl"
        and ":5001" in figure(studies, "001", "high", "Unit", "rps").configuration
    )
    assert figure(studies, "001", "high", "uWSGI", "rps").number == 2573.82
    assert figure(studies, "001", "high", "Starman", "rps").number == 4002.30
    errors = figure(studies, "001", "high", "uWSGI", "errors_read").number
    assert errors > figure(studies, "001", "high", "uWSGI", "requests").number


def test_the_second_starman_heading_of_seed_001_is_the_high_specs(located):
    """Its block is after the first one's, in the seed's text."""
    high, low = figure(located, "001", "high", "Starman", "rps"), figure(located, "001", "low", "Starman", "rps")
    assert high.line > low.line


def test_seed_001_low_spec_time_per_request_is_concurrency_times_elapsed_over_requests(studies):
    """ab's "Time per request (mean)" is c × elapsed / n: 10,000 requests took Starman about
    50 s; uWSGI's figures fit its own stated 800 connections and about 5,000 requests."""
    for server, concurrency, requests in (("Starman", 1000, 10000), ("Unit", 1000, 10000), ("uWSGI", 800, 5000)):
        rps = figure(studies, "001", "low", server, "rps").number
        per_request = figure(studies, "001", "low", server, "time_per_request").number
        assert per_request == pytest.approx(concurrency * (requests / rps) / requests * 1000, rel=2e-3), server
        row = figure(studies, "001", "low", server, "rps")
        assert (row.concurrency, row.requests) == (concurrency, requests), server
    assert 10000 / figure(studies, "001", "low", "Starman", "rps").number == pytest.approx(50.3, abs=0.1)


def test_claims_are_judged_by_the_seeds_own_figures(studies):
    claims = side.claims_in_brief(side.claim_table(studies)).set_index("claim")
    # "unit outperformed uwsgi handily" — the seed's own table says 0.66×.
    assert claims.loc["001-high-unit-over-uwsgi", "in_seed"] == side.CONTRADICTED
    assert "0.66×" in claims.loc["001-high-unit-over-uwsgi", "why"]
    # "roughly 60% margin or better regardless of the level of load": 1.39× over Starman at low.
    assert claims.loc["001-low-unit-60", "in_seed"] == side.CONTRADICTED
    assert claims.loc["001-high-starman-trounced", "in_seed"] == side.HOLDS
    # Seed 003 ranks in words only: nothing to contradict it with in the seed.
    assert claims.loc["003-rps-ranking", "in_seed"] == side.NOT_STATED
    # A range ("7500...5000") counts at its end least favourable to the claim.
    assert claims.loc["002-http11-socket", "in_seed"] == side.HOLDS
    # Without a run, nothing is measured.
    assert set(claims["in_run"]) == {side.NOT_MEASURED}


def test_the_seeds_servers_are_declared_comparisons_of_their_profiles(studies):
    sweep = ["bjoern", "cheroot", "gunicorn", "meinheld", "mod_wsgi", "uwsgi", "starman", "nginx-baseline"]
    pairs = side.declared_pairs(studies, "sweep", sweep)
    assert len(pairs) == 15 and ("bjoern", "uwsgi") in pairs
    assert not any("starman" in pair or "nginx-baseline" in pair for pair in pairs)
    assert side.declared_pairs(studies, "high", ["starman", "unit-perl"]) == [("starman", "unit-perl")]
    assert side.declared_pairs(studies, "default", sweep) == []


@pytest.mark.parametrize(
    "change, message, needs_texts",
    [
        (
            lambda d: d["figures"][0]["figures"][0].__setitem__(3, "Requests per second: 199.94 [#/sec] (mean)"),
            "quote",
            True,
        ),
        (lambda d: d["figures"][0]["figures"][0].__setitem__(1, 199.94), "not in its quote", True),
        (lambda d: d["claims"][0]["says"][0].__setitem__("better", "Feersum"), "no figures for", False),
        (lambda d: d["tables"][0].pop("tool"), "tool", False),
    ],
)
def test_seed_data_that_disagree_with_a_seed_are_refused(tmp_path, request, change, message, needs_texts):
    """A quote checked against its seed's text needs the texts; a claim or table that disagrees
    with the data is refused without them."""
    studies = request.getfixturevalue("located" if needs_texts else "studies")
    data = yaml.safe_load(seed_data.DATA_PATH.read_text())
    data["source_dir"] = str(studies.source_dir)
    change(data)
    path = tmp_path / "studies.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(seed_data.SeedDataError, match=message):
        seed_data.load(path)


def test_without_the_seeds_texts_the_data_still_load(tmp_path):
    data = yaml.safe_load(seed_data.DATA_PATH.read_text())
    data["source_dir"] = str(tmp_path / "absent")
    path = tmp_path / "studies.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    found = seed_data.load(path)
    assert not found.located and "not checked" in found.problems[0]
    assert found.figures["line"].isna().all()


def test_side_by_side_ranks_and_ratios(studies):
    """A run whose order is the seed's (Starman > uWSGI > Unit at high) has tau 1, whose ratios
    to Starman carry intervals; Unit made slower than uWSGI in every repeat keeps that order."""
    rng = np.random.default_rng(3)
    rows = []
    for server, level in (("starman", 3000), ("uwsgi-psgi", 2000), ("unit-perl", 1000)):
        for repeat in range(1, 6):
            rows.append(
                dict(
                    profile="high",
                    tool="wrk",
                    concurrency=1000,
                    server=server,
                    status="ok",
                    repeat=repeat,
                    rps=level * (1 + 0.02 * rng.standard_normal()),
                )
            )
    runs = pd.DataFrame(rows)
    summary = runs.groupby(["profile", "tool", "concurrency", "server"], as_index=False).first()
    summary["flags"] = ""
    table = side.side_by_side(studies, runs, summary).set_index("seed_server")
    assert table.loc["Starman", "rank"] == 1 and table.loc["Unit", "rank"] == 3
    assert table["kendall_tau"].iloc[0] == pytest.approx(1.0) and table["tau_ci_low"].iloc[0] == pytest.approx(1.0)
    assert table.loc["Unit", "ratio"] == pytest.approx(1 / 3, rel=0.05)
    assert table.loc["Unit", "ratio_ci_low"] < table.loc["Unit", "ratio"] < table.loc["Unit", "ratio_ci_high"]
    assert table.loc["Unit", "seed_ratio"] == pytest.approx(1694.14 / 4002.30)


def test_claims_read_from_a_runs_verdicts(studies):
    where = {"kind": "seed", "profile": "high", "tool": "wrk", "concurrency": 1000, "why": ""}
    columns = ["a", "b", "ratio", "ci_low", "ci_high", "outcome"]
    rows = [
        ("unit-perl", "uwsgi-psgi", 0.5, 0.45, 0.55, "slower"),
        ("starman", "unit-perl", 1.9, 1.5, 2.4, "faster"),
        ("starman", "uwsgi-psgi", 1.0, 0.9, 1.1, "undetermined"),
    ]
    verdicts = pd.DataFrame([{**where, **dict(zip(columns, row, strict=True))} for row in rows])
    table = side.claim_table(studies, verdicts, {"high"})
    brief = side.claims_in_brief(table).set_index("claim")
    assert brief.loc["001-high-unit-over-uwsgi", "in_run"] == side.CONTRADICTED
    assert brief.loc["001-high-starman-trounced", "in_run"] == side.UNDETERMINED
    assert brief.loc["003-rps-ranking", "in_run"] == side.NOT_MEASURED
    # The 60% claim: 0.5× [0.45, 0.55] against the claimed 1.6× contradicts it.
    rows = table[(table["claim"] == "001-low-unit-60") & (table["table"] == "high")]
    assert side.CONTRADICTED in set(rows["in_run"])


def test_starman_under_ab_keepalive_is_bound_by_its_idle_timeout(base_config, tmp_path, no_leftovers):
    """Seed 001's low-spec mechanism, small: 20 kept-alive connections on 2 Starman workers,
    ab -n 200 -k. A worker waits on an idle connection for its 1 s keep-alive timeout, so the
    run lasts about (20 - 2) / (2 × 2) × 1 s = 4.5 s however fast Starman is: recorded with
    the prediction beside the duration, and flagged."""
    require("starman", "ab")
    profile = base_config["profiles"]["default"]
    profile.update(requests=200, warmup=0, workers=2, fairness="connections", run_deadline=120)
    record = measure_cell(base_config, tmp_path, server="starman", tool="ab", concurrency=20)
    assert record["status"] == "ok", record["reason"]
    bound = record["checks"]["idle_timeout"]
    assert bound["predicted_s"] == pytest.approx(4.5) and bound["keepalive_timeout_s"] == 1
    assert 0.5 <= bound["measured_over_predicted"] <= 2, bound
    assert "idle_timeout_bound" in record["flags"]
    # The same load on connections that are not kept alive between requests is not bound by it.
    gunicorn = measure_cell(base_config, tmp_path / "gunicorn", server="gunicorn", tool="ab", concurrency=20)
    assert "idle_timeout" not in gunicorn["checks"]


def test_windows_of_a_run_answered_in_too_few_windows_have_no_near_top_share():
    """A run whose answers fall in fewer windows than its quantile's share (ab's 1,000
    connections served by a few workers) has a full-speed top of 0: no share near it."""
    snapshots = [(0.05 * i, {("c", k): (500 if i == 9 and k == 0 else 0) for k in range(10)}) for i in range(40)]
    load = LoadResult(requests=1, transfer_bytes=500, duration_s=2.0)
    found = windows(snapshots, load, {"window_s": 0.05, "quantile": 0.95, "near_top": 0.1})
    assert found.status == "ok" and found.full_speed_rps == 0 and found.near_top_share is None
