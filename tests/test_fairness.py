"""Fairness from the client's sockets: reading them (netlink, or ss) and judging the shares.

Real servers under load are in test_integrity.py; these pin down the
arithmetic on a real ss capture and on snapshots built to show each case,
and read real sockets both ways.
"""

import socket
import subprocess
import time

import pytest
from conftest import RAW, require
from serverbench.cell import fairness
from serverbench.host import sockdiag

STARVED = 0.1  # config.yaml's flags.starved_share


def test_parse_ss_keeps_connections_that_never_got_a_byte():
    # One connection accepted and answered 1,234 bytes; one left in the accept queue.
    sockets = fairness.parse_ss((RAW / "ss-one-served-one-waiting.txt").read_text())
    assert sorted(sockets.values()) == [0, 1234]
    assert all(key.startswith("127.0.0.1:") for key in sockets)


def snapshots(*rows):
    return [(0.5 * i, dict(row)) for i, row in enumerate(rows)]


def test_one_connection_served_and_99_waiting_is_starved():
    waiting = {f"c{i}": 0 for i in range(99)}
    shots = snapshots({"c99": 1000, **waiting}, {"c99": 50_000, **waiting}, {"c99": 99_000, **waiting})
    result = fairness.summarise(shots, 5000, STARVED)
    assert result["status"] == "ok"
    assert result["connections"] == 100
    assert result["idle_connections"] == result["starved_connections"] == 99
    assert result["min_over_mean"] == 0
    assert result["max_over_mean"] == 100
    assert result["client_rps_min"] == 0 and result["client_rps_max"] == 5000


def test_what_users_waited_counts_the_starved_connections():
    """The time between answers over all connections: a served connection's 1 / its answers per
    second; one that got nothing waited at least the window, and counts as the window."""
    waiting = {f"c{i}": 0 for i in range(9)}
    shots = snapshots({"c9": 0, **waiting}, {"c9": 500, **waiting}, {"c9": 1000, **waiting})
    result = fairness.summarise(shots, 500, STARVED)
    window = result["window_s"]
    assert result["waits_at_least_window"] == 9
    # 9 of 10 connections waited the whole window: the median and p90 are the window.
    assert result["wait_p50_ms"] == result["wait_p90_ms"] == pytest.approx(window * 1000)
    even = fairness.summarise(snapshots({"a": 0, "b": 0}, {"a": 500, "b": 500}, {"a": 1000, "b": 1000}), 200, STARVED)
    assert even["wait_p90_ms"] == pytest.approx(10.0) and even["waits_at_least_window"] == 0  # 100 answers/s each


def test_even_service_is_fair():
    shots = snapshots({"a": 0, "b": 0}, {"a": 500, "b": 520}, {"a": 1000, "b": 1010})
    result = fairness.summarise(shots, 200, STARVED)
    assert result["min_over_mean"] > 0.99
    assert result["starved_connections"] == 0
    assert result["client_rps_mean"] == 100


def test_window_leaves_out_connecting_and_closing():
    # The first snapshot caught the tool still connecting, the last one closing.
    shots = snapshots({"a": 0}, {"a": 10, "b": 10}, {"a": 90, "b": 80}, {"a": 170, "b": 150}, {"b": 160})
    result = fairness.summarise(shots, None, STARVED)
    assert result["window_s"] == 1.0
    assert result["bytes_min"] == 140 and result["bytes_max"] == 160


def test_connections_that_do_not_last_are_not_judged():
    shots = snapshots({"a": 100, "b": 100}, {"c": 100, "d": 100}, {"e": 100, "f": 100})
    assert fairness.summarise(shots, None, STARVED)["status"] == "not applicable"


def test_a_run_too_short_for_two_snapshots_says_so():
    assert fairness.summarise(snapshots({"a": 1}), None, STARVED)["status"] == "too short"
    assert fairness.summarise([], None, STARVED)["status"] == "too short"


def test_sampling_interval_gives_about_six_snapshots_within_bounds():
    assert fairness.sampling_interval(3) == 0.5
    assert fairness.sampling_interval(0.5) == 0.4
    assert fairness.sampling_interval(120) == 1.0
    assert fairness.sampling_interval(None) == 0.05  # ab -n: the run's length is unknown


def test_no_bytes_at_all_is_no_traffic_not_starvation():
    shots = snapshots({"a": 100, "b": 100}, {"a": 100, "b": 100}, {"a": 100, "b": 100})
    result = fairness.summarise(shots, 0.0, STARVED)
    assert result["status"] == "no traffic"
    assert "min_over_mean" not in result and "starved_connections" not in result


@pytest.fixture
def served_connections():
    """Three real connections to a listening socket: 1,000, 2,000 and 0 bytes received."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    accepted = [server.accept()[0] for _ in range(3)]
    for size, peer in zip((1000, 2000), accepted, strict=False):
        peer.sendall(b"x" * size)
    for size, client in zip((1000, 2000), clients, strict=False):
        assert len(client.recv(size, socket.MSG_WAITALL)) == size
    yield port
    for sock in (*clients, *accepted, server):
        sock.close()


def test_sock_diag_reads_what_ss_shows(served_connections):
    require("ss")
    port = served_connections
    reader = sockdiag.ClientSockets("127.0.0.1", port)
    try:
        read = reader.snapshot()
    finally:
        reader.close()
    argv = ["ss", "-tinHO", "state", "established", "dst", f"127.0.0.1:{port}"]
    shown = fairness.parse_ss(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    assert read == shown
    assert sorted(read.values()) == [0, 1000, 2000]


def test_sampler_falls_back_to_ss_where_the_kernel_refuses_netlink(served_connections, monkeypatch):
    require("ss")

    def refused(*args):
        raise sockdiag.SockDiagError("netlink sock_diag unavailable: test")

    monkeypatch.setattr(sockdiag, "ClientSockets", refused)
    with fairness.ConnectionSampler("127.0.0.1", served_connections, 0.05) as sampler:
        time.sleep(0.3)
    summary = sampler.summary(None, 0.1)
    assert summary["tool"] == "ss" and summary["argv"][0] == "ss"
    assert sorted(sampler.snapshots[-1][1].values()) == [0, 1000, 2000]
