"""Load up to 10,000 connections: the server under test may fail (that is
data), the harness may not."""

import pytest
from conftest import require
from serverbench.cell.phases import run_cell
from serverbench.plan.shapes import Cell

# Ten thousand connections take most of the open-file cap: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial


@pytest.mark.e2e
@pytest.mark.parametrize("server", ["gunicorn", "starman"])
@pytest.mark.parametrize("concurrency", [1000, 10000])
def test_sweep_to_ten_thousand_connections(base_config, tmp_path, no_leftovers, server, concurrency):
    require(server, "wrk", "ss")
    profile = base_config["profiles"]["default"]
    # Long enough for the socket reader to take two snapshots of 10,000 connections.
    profile.update(duration=2 if concurrency <= 1000 else 4, warmup=1, timeout=2)
    base = tmp_path / f"{server}-{concurrency}"
    record = run_cell(
        base_config, Cell("default", "wrk", server, concurrency, 1), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    assert record["status"] == "ok", record["reason"]
    load = record["load"]
    assert load["requests"] > 0
    assert record["client"]["argv"][record["client"]["argv"].index("-c") + 1] == str(concurrency)
    assert record["limits"]["nofile"] > concurrency
    # Both are given the profile's backlog: their listening socket holds it, within somaxconn.
    backlog = record["limits"]["listen_backlog"]
    assert backlog == min(profile["backlog"], record["limits"]["somaxconn"]), record["limits"]
    assert ("backlog_small" in record["flags"]) == (concurrency > backlog)
    assert record["server"]["stop"]["survivors"] == []
    # Reading 10,000 sockets' counters must not break the run either: gunicorn's
    # sync workers close every connection, Starman keeps them.
    expected = {"gunicorn": "not applicable", "starman": "ok"}[server]
    assert record["fairness"]["status"] == expected, record["fairness"]
