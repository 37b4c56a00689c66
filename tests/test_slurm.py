"""The workflow on a real scheduler: Debian's Slurm started here as a one-node
cluster (scripts/one-node-slurm: munge, slurmctld, slurmd, one partition, no
accounting), the tiny matrix run with ``--workflow-profile profiles/slurm``.
A round is the unit of placement: each round is one Slurm job, its cells on
one node, one after the other; the tables have a local run's shape; and
afterwards no job, server or daemon is left."""

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import TINY_MATRIX, missing, require, run_snakemake, server_processes
from serverbench import REPO_ROOT
from serverbench.tables.columns import RUN_COLUMNS, SUMMARY_COLUMNS

ONE_NODE = REPO_ROOT / "scripts" / "one-node-slurm"
SLURM_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")
DAEMONS = ("munged", "slurmctld", "slurmd")
SLURM_CONF = Path("/etc/slurm/slurm.conf")
# The first line scripts/one-node-slurm writes into SLURM_CONF: a config without it is a site's.
ONE_NODE_MARK = "# written by serverbench scripts/one-node-slurm"
SBIN_PATH = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"


def _running(names) -> set[str]:
    return {name for name in names if subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0}


def _require_one_node_slurm() -> None:
    absent = [program for program in SLURM_PROGRAMS if shutil.which(program, path=SBIN_PATH) is None]
    if absent:
        missing(f"needs Debian's Slurm and munge ({', '.join(absent)} not installed: scripts/install --slurm)")
    if os.geteuid() != 0:
        missing("starts munged, slurmctld and slurmd: needs root")
    if SLURM_CONF.exists() and ONE_NODE_MARK in SLURM_CONF.read_text():
        # Ours, so an earlier run's leftover, which a skip would hide.
        missing(f"{SLURM_CONF} is left from an earlier one-node cluster (scripts/one-node-slurm stop removes it)")
    if SLURM_CONF.exists() or _running(("slurmctld", "slurmd")):
        # A machine kind, not an install's gap: a host in a real Slurm site is not taken over.
        pytest.skip(f"a different machine kind: this host has its own Slurm cluster ({SLURM_CONF} or its daemons)")


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    require("gunicorn", "starman", "wrk")
    _require_one_node_slurm()
    results = tmp_path_factory.mktemp("slurm") / "results"
    env = {**os.environ, "PATH": SBIN_PATH}
    daemons_before = _running(DAEMONS)
    before = server_processes()
    started = subprocess.run([ONE_NODE, "start"], capture_output=True, text=True, env=env, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        # The tables only (charts and the page would add jobs, not placements). Status checks
        # every few seconds instead of the profile's 40 s: a tiny run, not a cluster's queue.
        targets = [str(results / name) for name in ("runs.csv", "summary.csv")]
        done = run_snakemake(
            [
                "--workflow-profile",
                "profiles/slurm",
                "--jobs",
                "4",
                "--latency-wait",
                "10",
                "--slurm-init-seconds-before-status-checks",
                "2",
                "--seconds-between-status-checks",
                "2",
                *targets,
            ],
            [*TINY_MATRIX, f"results={results}"],
            env=env,
            timeout=900,
        )
        queue = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True, env=env).stdout
    finally:
        stopped = subprocess.run([ONE_NODE, "stop"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    return results, queue, server_processes() - before, _running(DAEMONS) - daemons_before


def test_every_round_was_one_slurm_job_on_one_node(slurm_run):
    results, _, _, _ = slurm_run
    runs = pd.read_csv(results / "runs.csv")
    assert len(runs) == 4 and set(runs["status"]) == {"ok"}, runs[["server", "repeat", "status", "reason"]]
    assert runs["scheduler_job"].notna().all(), "every cell names the Slurm job that ran it"
    by_round = runs.groupby("repeat")
    assert (by_round["scheduler_job"].nunique() == 1).all(), runs[["server", "repeat", "scheduler_job"]]
    assert runs["scheduler_job"].nunique() == runs["repeat"].nunique(), "a job per round, not one for the run"
    assert (by_round["host_name"].nunique() == 1).all() and (by_round["host_boot_id"].nunique() == 1).all()


def test_a_rounds_cells_ran_one_after_the_other(slurm_run):
    """Inside a round's job the cells keep bench_slot's rule: never two at once."""
    results, _, _, _ = slurm_run
    runs = pd.read_csv(results / "runs.csv")
    for _, cells in runs.groupby("repeat"):
        ordered = cells.sort_values("job_start")
        for (_, end), (start, _) in itertools.pairwise(zip(ordered["job_start"], ordered["job_end"], strict=True)):
            assert start >= end


def test_the_tables_have_a_local_runs_shape(slurm_run):
    results, _, _, _ = slurm_run
    assert list(pd.read_csv(results / "runs.csv").columns) == RUN_COLUMNS
    summary = pd.read_csv(results / "summary.csv")
    assert list(summary.columns) == SUMMARY_COLUMNS
    assert sorted(summary["server"]) == ["gunicorn", "starman"] and set(summary["status"]) == {"ok"}


def test_nothing_is_left_behind(slurm_run):
    _, queue, servers_left, daemons_left = slurm_run
    states = [line.split()[1] for line in queue.splitlines()]
    assert set(states) <= {"COMPLETED"}, f"jobs not done when the run ended: {queue}"
    assert not servers_left
    assert not daemons_left, f"daemons still running: {daemons_left}"
    assert not Path("/etc/slurm/slurm.conf").exists()
