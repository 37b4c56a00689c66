"""A load tool the install leaves to the run that needs it: oha, whose cargo build takes minutes
that the default profile (wrk alone) never waits for. ``scripts/install-oha`` builds it once per
machine; a run whose profiles load with it calls that first (rule ``oha_install``), and its
record says whether it is there: a build that fails is a reason, never a failed job (the cells
that need oha are then skipped, naming it)."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from serverbench import REPO_ROOT
from serverbench.record.vocabulary import Status

SCHEMA = "serverbench.program-install/1"
INSTALLERS = {"oha": REPO_ROOT / "scripts" / "install-oha"}
# A cargo build of oha on two slow CPUs takes about a quarter of an hour; far longer is a hang.
INSTALL_TIMEOUT_S = 3600


@dataclass(frozen=True)
class ProgramInstall:
    """One program installed for the run: where it is, or why not."""

    schema: str
    program: str
    status: Status
    path: str | None
    reason: str | None
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def install(program: str, log: Path, path_env: str) -> ProgramInstall:
    """``program`` built by its installer (its output in ``log``), then found on ``path_env``."""
    started = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    reason = None
    with log.open("w") as out:
        try:
            done = subprocess.run(
                [str(INSTALLERS[program])],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=INSTALL_TIMEOUT_S,
                cwd=REPO_ROOT,
            )
            if done.returncode != 0:
                words = log.read_text().strip().splitlines()[-1:] or ["no output"]
                reason = f"{INSTALLERS[program].name} exited {done.returncode}: {words[0]}"
        except subprocess.TimeoutExpired:
            reason = f"{INSTALLERS[program].name} did not finish within {INSTALL_TIMEOUT_S} s"
    found = shutil.which(program, path=path_env)
    if reason is None and found is None:
        reason = f"{INSTALLERS[program].name} ended, yet no {program} on PATH"
    return ProgramInstall(
        SCHEMA,
        program,
        Status.OK if reason is None else Status.SKIPPED,
        found,
        reason,
        round(time.monotonic() - started, 1),
    )
