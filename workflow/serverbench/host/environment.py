"""``environment.json``: the machine, the software and the config of a run."""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
import time

import psutil

from serverbench import REPO_ROOT, __version__
from serverbench.host import steadiness
from serverbench.host.runenv import resolve_program, run_capture, run_env
from serverbench.host.sysctls import sysctl
from serverbench.plan.digest import config_hash
from serverbench.plan.matrix import Matrix

SYSCTLS = (
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_tw_reuse",
)


def cpu_model() -> str | None:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_facts() -> dict:
    """The machine a cell runs on, for its record: name, CPU model, kernel, this boot, and the
    scheduler's job that placed the cell here (Slurm's, where a cluster runs it)."""
    try:
        boot_id = open("/proc/sys/kernel/random/boot_id").read().strip()
    except OSError:
        boot_id = None
    return {
        "hostname": platform.node() or None,
        "cpu_model": cpu_model(),
        "kernel": platform.release() or None,
        "boot_id": boot_id,
        "scheduler_job": os.environ.get("SLURM_JOB_ID"),
    }


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--abbrev=40"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def versions(matrix: Matrix, env: dict) -> dict:
    """The version of every server, tool, language and fairness program the matrix uses."""
    config = matrix.config
    used_servers = {cell.server for cell in matrix.cells}
    used = {
        ("server", "catalogue"): used_servers,
        ("tool", "load_tools"): {cell.tool for cell in matrix.cells},
        ("language", "languages"): {config["catalogue"][name]["language"] for name in used_servers},
    }
    found = {}
    for (kind, section), names in used.items():
        for name in sorted(names):
            argv = config[section][name].get("version")
            if argv:
                found[f"{kind}:{name}"] = run_capture(resolve_program(config, list(map(str, argv))), env)
    # The programs that measure fairness are measuring instruments too.
    methods = {profile.fairness for profile in matrix.profiles.values()}
    for method, argv in (("connections", ["ss", "-V"]), ("h2load", ["h2load", "--version"])):
        if method in methods:
            # connections: read over netlink in-process, ss only where the kernel refuses that.
            found[f"fairness:{method}"] = run_capture(argv, env=env)
    return found


def collect(config: dict) -> dict:
    memory = psutil.virtual_memory()
    return {
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "serverbench": __version__,
        "git_commit": _git_commit(),
        "config_sha256": config_hash(config),
        "seed": config["seed"],
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_available": sorted(os.sched_getaffinity(0)),
        "memory_bytes": memory.total,
        "harness_python": sys.version,
        "nofile_limit": resource.getrlimit(resource.RLIMIT_NOFILE),
        "sysctl": {name: sysctl(name) for name in SYSCTLS},
        "versions": versions(Matrix(config), run_env()),
        # Every CPU this run may use, timed at once (serverbench.host.steadiness).
        "host_speed": steadiness.check(sorted(os.sched_getaffinity(0)), config.get("host_check_seconds", 0)),
    }
