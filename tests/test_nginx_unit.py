"""NGINX Unit, both languages, static and dynamic processes, configured through
its control API. Unit is not packaged here: the tests find `unitd` on PATH or
in the UNITD environment variable, and skip naming it otherwise."""

import pytest
from conftest import UNITD, require
from serverbench.cell.phases import run_cell
from serverbench.plan.shapes import Cell


@pytest.fixture
def unit_config(base_config):
    if not UNITD:
        pytest.skip("needs NGINX Unit's unitd (on PATH, or its path in $UNITD); Debian does not package it")
    require("wrk")
    base_config["programs"] = {"unitd": UNITD}
    return base_config


@pytest.mark.parametrize(
    ("server", "language"),
    [
        ("unit-python", "python"),
        ("unit-python-dynamic", "python"),
        ("unit-perl", "perl"),
        ("unit-perl-dynamic", "perl"),
    ],
)
def test_unit_application(unit_config, tmp_path, no_leftovers, server, language):
    base = tmp_path / server
    record = run_cell(unit_config, Cell("default", "wrk", server, 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log")
    assert record["status"] == "ok", record["reason"]
    assert record["server"]["control"]["status"] == 200
    assert record["server"]["version"].startswith("unit version:")
    assert record["server"]["interpreter"].startswith(language)
    assert record["verify"]["keepalive"] == "keeps"
    assert record["load"]["errors_total"] == 0
    assert record["server"]["stop"]["survivors"] == []
    # The control socket lives in the cell's private run directory, never elsewhere.
    assert record["server"]["argv"][record["server"]["argv"].index("--control") + 1].startswith(
        "unix:/tmp/serverbench-run-"
    )


def test_missing_unitd_is_skipped_with_the_reason(base_config, tmp_path):
    base_config["programs"] = {"unitd": None}
    base_config["catalogue"]["unit-python"]["command"][0] = "unitd-not-installed"
    base = tmp_path / "unit"
    record = run_cell(
        base_config, Cell("default", "wrk", "unit-python", 10, 1), f"{base}.json", f"{base}.txt", f"{base}.log"
    )
    assert record["status"] == "skipped"
    assert "unitd-not-installed" in record["reason"]
