"""`serverbench list servers`: a catalogue description that names a profile setting
("{workers_min} to {workers} workers") is shown with the values of the profile that runs the
server, and that profile named, never with its placeholders."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from serverbench import REPO_ROOT
from serverbench.drive import configfiles, listing

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick


def listed_servers(*args: str) -> dict[str, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "serverbench.cli", "list", "servers", "--json", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return {server["name"]: server for server in json.loads(done.stdout)["servers"]}


def test_no_listed_description_shows_a_placeholder():
    listed = listed_servers()
    assert {name: row["description"] for name, row in listed.items() if "{" in row["description"]} == {}
    # The autoscalers are named by the autoscale profile only: its workers, not the default's.
    autoscale = yaml.safe_load((REPO_ROOT / "config.yaml").read_text())["profiles"]["autoscale"]
    spare = listed["uwsgi-cheaper-spare"]
    assert spare["settings_from"] == "autoscale"
    assert spare["description"].endswith(
        f"; {autoscale['workers_min']} to {autoscale['workers']} workers (the autoscale profile's settings)"
    )
    assert listed["gunicorn"]["settings_from"] is None  # its description names no setting


def test_the_values_are_the_configs_and_the_selected_profile_comes_first(tmp_path):
    """A config of one's own that changes the autoscale profile's workers changes the line; one that
    selects a profile naming the server fills it from that profile instead."""
    mine = tmp_path / "mine.yaml"
    # smoke runs every server (`servers: all`) but names none: its workers are not the autoscalers'.
    mine.write_text("profiles: {autoscale: {workers: 7, workers_min: 3}, smoke: {workers: 4}}\n")
    changed = listed_servers("--configfile", str(mine))["uwsgi-cheaper-spare"]["description"]
    assert "; 3 to 7 workers (the autoscale profile's settings)" in changed
    # latency comes after autoscale in config.yaml: selected and naming the server, it comes first.
    base = configfiles.load(REPO_ROOT / "config.yaml", [mine], {"profile": "latency"})
    base["profiles"]["latency"]["servers"] = ["uwsgi-cheaper-spare"]
    [row] = [row for row in listing.servers(base) if row["name"] == "uwsgi-cheaper-spare"]
    latency = base["profiles"]["latency"]
    assert row["settings_from"] == "latency"
    workers_min = latency.get("workers_min") or latency["workers"]
    assert f"; {workers_min} to {latency['workers']} workers (the latency profile's" in row["description"]
