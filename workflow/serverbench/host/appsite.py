"""An app's own requirements (``requirements`` in its parts, plan.apps), installed before any
server of the run starts (rule app_site), and put where each server's copy of the app finds
them.

Python's (``pip``): pip installs them with this interpreter into a site directory of the app's
own, ``app_sites_dir``/APP-DIGEST (the digest of the requirements, pip's sources and the
Python's version), never into the harness's environment or a server's; a cell then serves the
app through an entry module written into its run directory that puts the site and the app's
directory first on the path and imports the app's callable, so gunicorn, uWSGI's plugin,
mod_wsgi and Unit's module all import the same versions (as the reference apps' frameworks
in /opt/serverbench/app-site). A site is complete once ``serverbench-app-site.json`` is in it
(written last): a later run reuses it.

Perl's (``debian``): Debian packages (there is no CPAN mirror here), checked with dpkg-query
and installed with apt-get where the run is root.

A requirement that cannot be installed is a record with status skipped and the installer's
last words, never a failed job: the app's cells in that language are skipped with it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from serverbench import files
from serverbench.host.releases import last_words
from serverbench.plan import apps
from serverbench.record.vocabulary import Status

SCHEMA = "serverbench.app-site/1"
MARKER = "serverbench-app-site.json"
ENTRY_MODULE = "serverbench_app_entry"
INSTALL_TIMEOUT_S = 900
# The interpreter pip installs with (this one): its version keys the site.
INTERPRETER = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass(frozen=True)
class PartInstall:
    """One language's requirements: how, where, what was installed, or why not."""

    language: str
    installer: str
    requirements: list[str]
    status: Status
    reason: str | None = None
    site: str | None = None  # pip's: the app's site directory
    installed: dict[str, str] = field(default_factory=dict)  # distribution or package -> version
    seconds: float | None = None
    reused: bool = False  # pip's site was complete already; Debian's packages were installed already

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "status": self.status.value}

    @classmethod
    def from_dict(cls, data: dict) -> PartInstall:
        return cls(**{**data, "status": Status(data["status"])})


@dataclass(frozen=True)
class SiteRecord:
    """The app's requirements, per language (the run's ``apps/APP/site.json``)."""

    app: str
    parts: dict[str, PartInstall]
    interpreter: str = INTERPRETER  # the version of the Python pip installed with
    schema: str = SCHEMA

    def as_dict(self) -> dict:
        parts = {language: part.as_dict() for language, part in self.parts.items()}
        return {"app": self.app, "parts": parts, "interpreter": self.interpreter, "schema": self.schema}

    @classmethod
    def from_dict(cls, data: dict) -> SiteRecord:
        parts = {language: PartInstall.from_dict(part) for language, part in data["parts"].items()}
        return cls(data["app"], parts, data["interpreter"], data["schema"])


def site_dir(config: dict, app: str, part: dict) -> Path:
    """Where pip installs the part's requirements: one directory per app, requirements, pip
    sources and Python version, so a changed requirement is a new site and an unchanged one is
    reused."""
    keyed = {key: part.get(key) for key in ("requirements", "find_links", "index_url")}
    digest = hashlib.sha256(json.dumps({**keyed, "interpreter": INTERPRETER}, sort_keys=True).encode()).hexdigest()[:16]
    return Path(config["app_sites_dir"]) / f"{app}-{digest}"


def _run(argv: list[str], log: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    with log.open("a") as out:
        out.write(f"serverbench: {argv}\n")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        done = subprocess.CompletedProcess(argv, 127, "", f"did not run: {exc}")
    with log.open("a") as out:
        out.write(done.stdout + done.stderr)
    return done


def _distributions(site: Path) -> dict[str, str]:
    """What pip put in the site: each distribution's name and version, from its metadata."""
    found = {}
    for info in sorted(site.glob("*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        found[name] = version
    return found


def install_pip(config: dict, app: str, language: str, part: dict, log: Path) -> PartInstall:
    """The part's pip requirements into the app's site (reused where complete)."""
    started, wanted = time.monotonic(), list(part["requirements"])
    site = site_dir(config, app, part)
    if (site / MARKER).is_file():
        return PartInstall(
            language,
            apps.PIP,
            wanted,
            Status.OK,
            site=str(site),
            installed=_distributions(site),
            seconds=round(time.monotonic() - started, 2),
            reused=True,
        )
    building = site.with_name(f"{site.name}.partial")
    shutil.rmtree(building, ignore_errors=True)
    building.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--no-cache-dir",
        "--target",
        str(building),
    ]
    if part.get("find_links"):
        argv += ["--no-index", "--find-links", part["find_links"]]
    elif part.get("index_url"):
        argv += ["--index-url", part["index_url"]]
    done = _run([*argv, *wanted], log)
    seconds = round(time.monotonic() - started, 2)
    if done.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        reason = f"pip could not install {', '.join(wanted)}: {last_words(done.stdout + done.stderr)}"
        return PartInstall(language, apps.PIP, wanted, Status.SKIPPED, reason=reason, seconds=seconds)
    for path in [building, *building.rglob("*")]:  # readable by servers that drop privileges (www-data)
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
    installed = _distributions(building)
    marker = {"app": app, "requirements": wanted, "installed": installed, "interpreter": INTERPRETER}
    files.write_json(building / MARKER, marker)
    shutil.rmtree(site, ignore_errors=True)  # an earlier install cut short before its marker
    building.rename(site)
    return PartInstall(language, apps.PIP, wanted, Status.OK, site=str(site), installed=installed, seconds=seconds)


def _debian_versions(packages: list[str]) -> dict[str, str | None]:
    """Each package's installed version, None where it is not installed."""
    found = {}
    for package in packages:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Status}\t${Version}", package], capture_output=True, text=True, check=False
        )
        status, _, version = done.stdout.partition("\t")
        found[package] = version if done.returncode == 0 and status.endswith(" installed") else None
    return found


def install_debian(language: str, packages: list[str], log: Path) -> PartInstall:
    """The part's Debian packages, installed with apt-get where missing (as root)."""
    started = time.monotonic()
    versions = _debian_versions(packages)
    missing = [package for package, version in versions.items() if version is None]
    reused = not missing
    if missing and os.geteuid() != 0:
        reason = f"not installed: {', '.join(missing)} (as root: apt-get install {' '.join(missing)})"
        return PartInstall(language, apps.DEBIAN, packages, Status.SKIPPED, reason=reason)
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        done = _run(["apt-get", "install", "-y", "--no-install-recommends", *missing], log, env)
        versions = _debian_versions(packages)
        still = [package for package, version in versions.items() if version is None]
        if still:
            reason = f"apt-get could not install {', '.join(still)}: {last_words(done.stdout + done.stderr)}"
            return PartInstall(
                language,
                apps.DEBIAN,
                packages,
                Status.SKIPPED,
                reason=reason,
                seconds=round(time.monotonic() - started, 2),
            )
    return PartInstall(
        language,
        apps.DEBIAN,
        packages,
        Status.OK,
        installed={p: v for p, v in versions.items() if v},
        seconds=round(time.monotonic() - started, 2),
        reused=reused,
    )


def install(config: dict, app: str, log: Path) -> SiteRecord:
    """Every part's requirements of ``app``; a record either way."""
    log.parent.mkdir(parents=True, exist_ok=True)
    parts = {}
    for language, wanted in apps.requirements(config, app).items():
        part = config["apps"][app][language]
        how = apps.installer(config, language)
        parts[language] = (
            install_pip(config, app, language, part, log) if how == apps.PIP else install_debian(language, wanted, log)
        )
    return SiteRecord(app, parts)


def read_record(config: dict, app: str) -> SiteRecord | None:
    path = Path(apps.app_site_record(config, app))
    return SiteRecord.from_dict(json.loads(path.read_text())) if path.is_file() else None


def not_installed_reason(config: dict, app: str, language: str) -> str | None:
    """Why the app's requirements in ``language`` are not there for a cell (None: they are, or
    it asks for none)."""
    if language not in apps.requirements(config, app):
        return None
    record = read_record(config, app)
    part = record.parts.get(language) if record else None
    if part is None:
        return f"the app {app!r}'s {language} requirements are not installed (rule app_site installs them)"
    if part.status is not Status.OK:
        return f"the app {app!r}'s {language} requirements: {part.reason}"
    return None


def entry_part(config: dict, app: str, language: str, part: dict, rundir: Path) -> dict:
    """The part a cell serves when the app has pip requirements: an entry module in the
    run directory that puts the app's site and directory first on the path and hands over the
    app's callable under its own name (servers import it by module or by file alike)."""
    record = read_record(config, app)
    site = record.parts[language].site
    directory = part.get("dir") or str(Path(part["file"]).parent)
    module = part.get("module") or Path(part["file"]).stem
    name = part.get("callable") or config["languages"][language].get("default_callable", "application")
    entry = rundir / "app" / "entry"
    entry.mkdir(parents=True, exist_ok=True)
    (entry / f"{ENTRY_MODULE}.py").write_text(
        '"""Written by serverbench for this cell (serverbench.host.appsite): the app\'s own\n'
        'requirements (rule app_site) and its directory first on the path, then the app."""\n\n'
        "import importlib\nimport sys\n\n"
        f"sys.path[:0] = [{site!r}, {directory!r}]\n"
        f"{name} = importlib.import_module({module!r}).{name}\n"
    )
    for path in (rundir / "app", entry, entry / f"{ENTRY_MODULE}.py"):
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
    return {"dir": str(entry), "module": ENTRY_MODULE, "callable": name}
