"""Client and server on separate hosts: the server in its own network
namespace, joined to the client by a veth pair (real servers, real wrk)."""

import shutil
import subprocess

import pytest
from conftest import measure_cell, missing, require


def leftover_namespaces() -> list[str]:
    """serverbench's network namespaces that still exist (none should, outside a running cell)."""
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    return [line.split()[0] for line in done.stdout.splitlines() if line.startswith("serverbench-")]


def netns_problem() -> str | None:
    if shutil.which("ip") is None:
        return "needs `ip` (Debian package iproute2)"
    probe = "serverbench-probe-capability"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"cannot create network namespaces here: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@pytest.fixture
def netns():
    """Skips, at run time and for the namespace tests alone, where namespaces cannot be made
    (under `make test`, run as root with iproute2 installed: fails)."""
    problem = netns_problem()
    if problem:
        missing(problem)


@pytest.mark.parametrize("server", ["gunicorn", "starman", "flup-nginx"])
def test_a_cell_runs_with_the_server_in_its_own_namespace(server, base_config, tmp_path, no_leftovers, netns):
    require("wrk", "ip")
    base_config["profiles"]["default"]["network"] = "netns"
    record = measure_cell(base_config, tmp_path, server)
    assert record["status"] == "ok", record["reason"]
    net = record["network"]
    assert net["mode"] == "netns" and net["link"] == "veth pair"
    assert net["server_address"].startswith("10.213.") and net["server_address"] != net["client_address"]
    assert record["server"]["host"] == net["server_address"]
    assert net["server_address"] in record["client"]["argv"][-1]
    assert record["load"]["requests"] > 0 and record["load"]["errors_total"] == 0
    # The namespace and its link are gone with the cell.
    assert leftover_namespaces() == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "sbh" not in links


def test_loopback_stays_the_default(base_config, tmp_path, no_leftovers):
    require("wrk")
    record = measure_cell(base_config, tmp_path, "gunicorn")
    assert record["status"] == "ok", record["reason"]
    assert record["network"] == {
        "mode": "loopback",
        "namespace": None,
        "server_address": "127.0.0.1",
        "client_address": None,
        "link": "loopback",
    }
