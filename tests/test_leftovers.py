"""The leftover detector the tests' `no_leftovers` fixture relies on (conftest.server_processes):
a process this session started that runs a serverbench app or load client is found wherever it
runs, pytest's own temporary directory included; a process of another session is not."""

import os
import subprocess
import sys

import pytest
from conftest import SESSION_TAG, server_processes

pytestmark = pytest.mark.quick


def sleeper(tmp_path, tag: str) -> subprocess.Popen:
    # A run directory as the harness names it, below pytest's tmp dir (its path says "pytest").
    rundir = tmp_path / "serverbench-run-leftover"
    rundir.mkdir()
    env = {**os.environ, "SERVERBENCH_TEST_SESSION": tag}
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(rundir)], env=env)


@pytest.mark.parametrize("ours", [True, False], ids=["this-session", "another-session"])
def test_a_leftover_in_pytests_tmp_dir_is_found_and_anothers_is_not(tmp_path, ours):
    assert "pytest" in str(tmp_path)
    tag, found = (SESSION_TAG, True) if ours else ("serverbench-test-another-session", False)
    process = sleeper(tmp_path, tag)
    try:
        assert (process.pid in server_processes()) is found
    finally:
        process.kill()
        process.wait()
    assert process.pid not in server_processes()
