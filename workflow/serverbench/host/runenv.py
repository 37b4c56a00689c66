"""Where servers and tools run: their environment, a private run directory,
and the short commands that report a program's version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from serverbench import REPO_ROOT


def run_env() -> dict:
    """Environment for servers and tools: this interpreter's bin first on PATH."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    path = [bindir, *env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(os.pathsep)]
    # Servers such as nginx and apache2 live in sbin, which a non-login PATH may lack.
    path += [d for d in ("/usr/local/sbin", "/usr/sbin", "/sbin") if d not in path]
    env["PATH"] = os.pathsep.join(path)
    return env


def _readable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def make_rundir() -> Path:
    """A private run directory holding a readable copy of the apps.

    Servers that drop privileges (Apache's children, mod_wsgi-express,
    Unit's application processes) cannot read a checkout under a 0700 home,
    so they get the apps from here. The directory itself can be traversed but
    not listed (0711); control sockets inside it are the server's own.
    """
    rundir = Path(tempfile.mkdtemp(prefix="serverbench-run-"))
    rundir.chmod(0o711)
    shutil.copytree(REPO_ROOT / "apps", rundir / "apps", ignore=shutil.ignore_patterns("__pycache__"))
    _readable(rundir / "apps")
    return rundir


def readable_app(rundir: Path, part: dict, language: str) -> dict:
    """An app's part (plan.apps) with its code from outside the repository's apps/ copied into
    the run directory (``app/<language>``), readable as the hello app's copy is: servers that
    drop privileges (mod_wsgi-express as www-data, Apache's children) cannot read a directory
    under a 0700 home. The part's paths then name the copy. A ``dir`` is copied whole (its
    ``file``, if under it, follows); a ``file`` alone is copied by itself."""
    copied = dict(part)
    target = rundir / "app" / language
    outside = {key: part[key] for key in ("dir", "file") if key in part and not part[key].startswith("{apps}")}
    if "dir" in outside:
        source = Path(outside["dir"])
        shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".git"))
        copied["dir"] = str(target)
        if "file" in outside and Path(outside["file"]).is_relative_to(source):
            copied["file"] = str(target / Path(outside["file"]).relative_to(source))
    elif "file" in outside:
        target.mkdir(parents=True)
        copied["file"] = str(Path(shutil.copy2(outside["file"], target)))
    if outside:
        _readable(rundir / "app")
    return copied


class SetupFailed(RuntimeError):
    """An app's setup that did not run or exited non-zero; the message names its argv."""


def run_setup(argv: list[str], log_path: Path, cwd: Path | None, env: dict | None, timeout: float) -> None:
    """An app's ``setup`` (its database's rows): its output appended to ``log_path``."""
    with Path(log_path).open("ab") as log:
        log.write(f"serverbench: the app's setup: {argv}\n".encode())
        log.flush()
        try:
            done = subprocess.run(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, timeout=timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SetupFailed(f"setup {argv} did not run: {exc}") from None
    if done.returncode != 0:
        raise SetupFailed(f"setup {argv} exited {done.returncode} (its output: {log_path})")


def run_capture(argv: list[str], env: dict | None = None, timeout: float = 15) -> str:
    """Output of a short informational command (a version), or the error."""
    try:
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"<unavailable: {exc}>"
    text = (done.stdout + done.stderr).decode(errors="replace").strip()
    return text.splitlines()[0].strip() if text else f"<no output, exit {done.returncode}>"


def version_of(argv, env: dict) -> str | None:
    """The first line a version command prints (None when there is no command)."""
    return run_capture([str(a) for a in argv], env=env) if argv else None


def resolve_program(config: dict, argv: list[str]) -> list[str]:
    """The argv with its program's path: the one set in ``programs``, else the first
    of ``program_dirs`` that has it (where scripts/install builds what no package
    holds, such as unitd), else the bare name for PATH to find."""
    if not argv:
        return []
    path = (config.get("programs") or {}).get(argv[0])
    if not path and "/" not in argv[0]:
        found = (Path(folder) / argv[0] for folder in config.get("program_dirs") or [])
        path = next((str(p) for p in found if p.is_file() and os.access(p, os.X_OK)), None)
    return [path, *argv[1:]] if path else list(argv)
