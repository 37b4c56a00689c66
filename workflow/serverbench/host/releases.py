"""Installing a release (``plan.releases``): a virtual environment of its own, made by
this interpreter, with pip installing the one requirement into it; never the harness's
environment, whose pinned versions stay as they are.

The prefix is complete once ``serverbench-release.json`` is in it (written last, atomically):
an install that finds it reuses the prefix; one that finds a prefix without it (an install
cut short) starts again. A version pip cannot install (no wheel, a build that fails) is an
``InstallRecord`` with status skipped and pip's last words as the reason, never an exception:
the other versions run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from serverbench import files
from serverbench.plan.catalogue import Release
from serverbench.record.vocabulary import Status

SCHEMA = "serverbench.release-install/1"
MARKER = "serverbench-release.json"
# uWSGI builds from its source distribution: a few minutes on two slow CPUs; longer is a hang.
INSTALL_TIMEOUT_S = 1200
# The prefix's interpreter, by the name this one has (a virtual environment holds every alias).
INTERPRETER = Path(sys.executable).name


@dataclass(frozen=True)
class InstallRecord:
    """One release's install: where, what pip installed, how long it took, or why not."""

    package: str
    version: str
    requirement: str
    prefix: str
    status: Status
    reason: str | None = None
    installed_version: str | None = None  # what the prefix's own Python reports for the distribution
    python: str | None = None
    seconds: float | None = None
    reused: bool = False  # the prefix was complete already
    log: str | None = None  # pip's output
    schema: str = SCHEMA

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "status": self.status.value}

    @classmethod
    def from_dict(cls, data: dict) -> InstallRecord:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**{k: v for k, v in data.items() if k in known}, "status": Status(data["status"])})


def marker(prefix: str | Path) -> Path:
    return Path(prefix) / MARKER


def failure_marker(prefix: str | Path) -> Path:
    """Beside the prefix (removed with it): why the last install of it failed."""
    return Path(f"{prefix}.not-installed.json")


def not_installed_reason(release: Release) -> str | None:
    """Why this release cannot run here (None: it is installed)."""
    if read_installed(release) is not None:
        return None
    failed = failure_marker(release.prefix)
    if failed.is_file():
        return f"release {release.requirement} not installed: {json.loads(failed.read_text()).get('reason')}"
    return f"release {release.requirement} not installed in {release.prefix} (rule release_install installs it)"


def read_installed(release: Release) -> InstallRecord | None:
    """The complete install of this release, None where there is none."""
    path = marker(release.prefix)
    if not path.is_file():
        return None
    record = InstallRecord.from_dict(json.loads(path.read_text()))
    return record if record.requirement == release.requirement else None


def interpreter(release: Release) -> str:
    """The Python of the release's prefix."""
    return str(Path(release.prefix) / "bin" / INTERPRETER)


def pip_argv(release: Release) -> list[str]:
    python = interpreter(release)
    argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-cache-dir"]
    if release.find_links:
        argv += ["--no-index", "--find-links", release.find_links]
    elif release.index_url:
        argv += ["--index-url", release.index_url]
    return [*argv, release.requirement]


def _version_in(release: Release) -> str | None:
    python = interpreter(release)
    probe = f"import importlib.metadata as m; print(m.version({release.distribution!r}))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or None if done.returncode == 0 else None


def last_words(text: str, lines: int = 4) -> str:
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) or "no output"


def _failed(release: Release, reason: str, started: float, log: Path) -> InstallRecord:
    shutil.rmtree(release.prefix, ignore_errors=True)  # nothing half-made is left to be taken for a release
    record = InstallRecord(
        release.package,
        release.version,
        release.requirement,
        release.prefix,
        Status.SKIPPED,
        reason=reason,
        seconds=round(time.monotonic() - started, 2),
        log=str(log),
    )
    files.write_json(failure_marker(release.prefix), record.as_dict())
    return record


def install(release: Release, log: Path) -> InstallRecord:
    """This release in its prefix: reused where complete, else made (pip's output in ``log``)."""
    found = read_installed(release)
    if found is not None:
        return dataclasses.replace(found, reused=True)
    started = time.monotonic()
    prefix = Path(release.prefix)
    shutil.rmtree(prefix, ignore_errors=True)
    failure_marker(prefix).unlink(missing_ok=True)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        try:
            for argv in ([sys.executable, "-m", "venv", str(prefix)], pip_argv(release)):
                out.write(f"$ {' '.join(argv)}\n")
                out.flush()
                done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_S)
                if done.returncode != 0:
                    words = last_words(log.read_text())
                    return _failed(release, f"{argv[2]} exited {done.returncode}: {words}", started, log)
        except subprocess.TimeoutExpired:
            return _failed(release, f"not installed within {INSTALL_TIMEOUT_S} s", started, log)
    installed = _version_in(release)
    if installed != release.version:
        return _failed(release, f"pip installed {installed or 'nothing'} for {release.requirement}", started, log)
    record = InstallRecord(
        release.package,
        release.version,
        release.requirement,
        str(prefix),
        Status.OK,
        installed_version=installed,
        python=".".join(map(str, sys.version_info[:3])),
        seconds=round(time.monotonic() - started, 2),
        log=str(log),
    )
    files.write_json(marker(prefix), record.as_dict())
    return record


def release_env(release: Release, env: dict) -> dict:
    """A server's environment with its release's programs first on PATH."""
    bindir = str(Path(release.prefix) / "bin")
    return {**env, "PATH": f"{bindir}:{env.get('PATH', '')}", "VIRTUAL_ENV": release.prefix}
