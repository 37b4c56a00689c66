"""oha, left to the run that needs it: the default profile (wrk alone) never waits for its cargo
build, a profile that loads with it anywhere in its settings builds it before any server starts,
and a build that fails is a record with the reason, not a failed job."""

from __future__ import annotations

import json
import os

import pytest
from conftest import run_snakemake
from serverbench.host import programs
from serverbench.plan import config as cfg
from serverbench.plan.tools import programs_of
from serverbench.record.vocabulary import Status

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick


def test_the_programs_a_profile_loads_with_are_read_from_every_setting(base_config):
    config = cfg.validate(base_config)

    def programs(name):
        return programs_of(config, [cfg.requested_profile(config, name)])

    assert programs("default") == {"wrk"}
    assert programs("quick") == {"wrk", "ab"}
    # advise names its client tool inside its own settings, the latency profile inside open_loop
    assert "oha" in programs("advise") and "oha" in programs("latency") and "oha" in programs("front")
    config["tools"] = ["oha"]  # a top-level override replaces every profile's tools
    assert programs_of(config, [cfg.requested_profile(config, "default")]) == {"oha"}


def planned_rules(tmp_path, *config: str) -> str:
    done = run_snakemake(["-n", "--quiet", "rules"], [f"results={tmp_path / 'results'}", *config], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def test_the_default_run_builds_no_oha_and_advise_builds_it_first(tmp_path):
    assert "program_install" not in planned_rules(tmp_path)
    listed = planned_rules(tmp_path, "profile=advise")
    assert "program_install          1" in listed, listed


def test_a_build_that_fails_is_a_record_with_its_reason(tmp_path, monkeypatch):
    failing = tmp_path / "install-oha"
    failing.write_text("#!/bin/sh\necho 'serverbench: WARNING: no cargo, oha not built'\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setitem(programs.INSTALLERS, "oha", failing)
    record = programs.install("oha", tmp_path / "oha.log", path_env=str(tmp_path))
    assert record.status == Status.SKIPPED and record.path is None
    assert record.reason == "install-oha exited 1: serverbench: WARNING: no cargo, oha not built"
    assert json.loads(json.dumps(record.as_dict()))["status"] == "skipped"


def test_a_build_that_succeeds_records_where_the_program_is(tmp_path, monkeypatch):
    built = tmp_path / "bin"
    built.mkdir()
    (built / "oha").write_text("#!/bin/sh\necho oha 1.16.0\n")
    (built / "oha").chmod(0o755)
    succeeding = tmp_path / "install-oha"
    succeeding.write_text("#!/bin/sh\nexit 0\n")
    succeeding.chmod(0o755)
    monkeypatch.setitem(programs.INSTALLERS, "oha", succeeding)
    record = programs.install("oha", tmp_path / "oha.log", path_env=f"{built}{os.pathsep}/usr/bin")
    assert record.status == Status.OK and record.path == str(built / "oha") and record.reason is None
