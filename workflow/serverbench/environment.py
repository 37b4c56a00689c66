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
from serverbench.cell import run_env
from serverbench.config import cells, requested_profile, resolve_program
from serverbench.results import config_hash
from serverbench.servers import run_capture


def _cpu_model() -> str | None:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


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


def _sysctl(name: str) -> str | None:
    try:
        return open(f"/proc/sys/{name.replace('.', '/')}").read().strip()
    except OSError:
        return None


def collect(config: dict) -> dict:
    env = run_env()
    used_servers = {cell.server for cell in cells(config)}
    used_tools = {cell.tool for cell in cells(config)}
    used_languages = {config["catalogue"][name]["language"] for name in used_servers}
    versions = {}
    for kind, section, used in (
        ("server", "catalogue", used_servers),
        ("tool", "load_tools", used_tools),
        ("language", "languages", used_languages),
    ):
        for name in sorted(used):
            argv = config[section][name].get("version")
            if argv:
                versions[f"{kind}:{name}"] = run_capture(resolve_program(config, [str(a) for a in argv]), env=env)
    # The programs that measure fairness are measuring instruments too.
    methods = {requested_profile(config, name)["fairness"] for name in {cell.profile for cell in cells(config)}}
    for method, argv in (("connections", ["ss", "-V"]), ("h2load", ["h2load", "--version"])):
        if method in methods:
            versions[f"fairness:{method}"] = run_capture(argv, env=env)
    memory = psutil.virtual_memory()
    return {
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "serverbench": __version__,
        "git_commit": _git_commit(),
        "config_sha256": config_hash(config),
        "seed": config["seed"],
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_available": sorted(os.sched_getaffinity(0)),
        "memory_bytes": memory.total,
        "python": sys.version,
        "nofile_limit": resource.getrlimit(resource.RLIMIT_NOFILE),
        "sysctl": {
            name: _sysctl(name)
            for name in (
                "net.core.somaxconn",
                "net.ipv4.tcp_max_syn_backlog",
                "net.ipv4.ip_local_port_range",
                "net.ipv4.tcp_tw_reuse",
            )
        },
        "versions": versions,
    }
