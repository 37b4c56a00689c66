"""What every life of the work lens runs with: a fixed environment (the same few variables,
fixed hash seeds, a planted variant's extra work, a preloaded library where a server ignores
its hash seed), the programs the lens needs, and the versions that counted (``Tools``)."""

from __future__ import annotations

import os
import platform
import pwd
import shutil

from serverbench.host.environment import cpu_model
from serverbench.host.runenv import resolve_program, run_env, version_of
from serverbench.lenses.work.record import Tools
from serverbench.plan.catalogue import ServerEntry, server_entry

# Hash seeds fixed, address randomisation off (setarch -R): the same work every life.
FIXED_SEEDS = {"PYTHONHASHSEED": "0", "PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}
PASSED_THROUGH = ("SERVERBENCH_TEST_SESSION",)


def fixed_env(server: str, extra: dict[str, str]) -> dict[str, str]:
    """The environment of every life: the same few variables, whatever the job's own."""
    user = pwd.getpwuid(os.getuid())
    return {
        "PATH": run_env()["PATH"],
        "HOME": user.pw_dir,
        "USER": user.pw_name,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        **FIXED_SEEDS,
        # The server's name: an A/A twin runs from another environment (and directory) on purpose.
        "SERVERBENCH_WORK_SERVER": server,
        # A test session's tag, by which its check for leftover processes knows its own.
        **{name: os.environ[name] for name in PASSED_THROUGH if name in os.environ},
        **extra,
    }


def _valgrind_build(config: dict, spec: ServerEntry, env: dict) -> bool | None:
    """Whether the server's interpreter was built to cooperate with valgrind (None: not asked)."""
    command = config["languages"][spec.language].get("valgrind_build")
    if not command:
        return None
    program = (spec.interpreter or command)[0]
    answer = version_of(resolve_program(config, [program, *command[1:]]), env)
    return {"True": True, "False": False}.get(answer or "")


def tools(config: dict, server: str, env: dict) -> Tools:
    spec = server_entry(config, server)
    return Tools(
        valgrind=version_of(["valgrind", "--version"], env),
        perf=version_of(["perf", "--version"], env),
        interpreter_with_valgrind=_valgrind_build(config, spec, env),
        cpu_model=cpu_model() or platform.processor() or None,
        glibc_tunables=env.get("GLIBC_TUNABLES"),
        preload=env.get("LD_PRELOAD"),
    )


def planted(config: dict, spec: ServerEntry) -> dict[str, str]:
    """A planted variant's fixed extra work: the iterations it names, or as many as its share
    of ``work_lens.hello_iterations`` (the timed lens's calibration varies per start)."""
    env = spec.env
    if env.get("SERVERBENCH_EXTRA_ITERATIONS"):
        return {"SERVERBENCH_EXTRA_ITERATIONS": str(env["SERVERBENCH_EXTRA_ITERATIONS"])}
    share = env.get("SERVERBENCH_EXTRA_SHARE")
    if not share:
        return {}
    return {"SERVERBENCH_EXTRA_ITERATIONS": str(round(float(share) * config["work_lens"]["hello_iterations"]))}


def preloaded(config: dict, spec: ServerEntry) -> dict[str, str]:
    """A server whose interpreter ignores the environment's hash seed (``ignores_hash_seed_env``)
    gets ``work_lens.fixed_random`` preloaded: its getrandom() returns the same bytes in every
    life, so every life hashes alike (fixed_random.c says why)."""
    if not spec.ignores_hash_seed_env:
        return {}
    return {"LD_PRELOAD": config["work_lens"]["fixed_random"]}


def missing_programs(env: dict) -> list[str]:
    needed = ("valgrind", "perf", "setarch", "h2load", "ab", "taskset", "chrt")
    return [name for name in needed if not shutil.which(name, path=env["PATH"])]
