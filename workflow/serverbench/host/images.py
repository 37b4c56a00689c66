"""The images docker-isolated servers run in, made without any image registry.

The base is Debian itself: ``debootstrap --variant=minbase`` into a private
directory, imported with ``docker import``. It trusts the certificate
authorities the host added (``/usr/local/share/ca-certificates``), so a build
behind a TLS-inspecting proxy reaches Debian and PyPI as the host does. The
servers image is built on it with ``--network host`` from the Dockerfile in
``envs/docker/`` with ``envs/`` as context, and tagged with a digest of those
files and of the base: it is rebuilt only when they change. Every build's log
is kept under ``docker.state_dir/logs``.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from serverbench import REPO_ROOT
from serverbench.host.engine import state_dir

HOST_CAS = Path("/usr/local/share/ca-certificates")
BUILD_TIMEOUT_S = 1800


class ImageError(RuntimeError):
    """An image could not be made; the message names the log."""


@dataclass
class Image:
    tag: str
    digest: str
    built: bool  # False: an image with this digest was already there
    build_s: float | None
    log: str | None


def docker_settings(config: dict) -> dict:
    return config.get("docker") or {}


def context_digest(context: Path, extra: str = "") -> str:
    """SHA-256 of every file under the build context (names and bytes), plus ``extra``."""
    digest = hashlib.sha256(extra.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def image_id(tag: str, env: dict) -> str | None:
    done = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True, text=True, env=env
    )
    return done.stdout.strip() if done.returncode == 0 else None


def sources_list(mirror: str, suite: str) -> str:
    security = mirror.rsplit("/", 1)[0] + "/debian-security"
    return f"deb {mirror} {suite} main\ndeb {mirror} {suite}-updates main\ndeb {security} {suite}-security main\n"


def debootstrap_argv(suite: str, root: Path, mirror: str) -> list[str]:
    return ["debootstrap", "--variant=minbase", suite, str(root), mirror]


def _run_logged(argv: list[str], log, env: dict, **kwargs) -> None:
    log.write(f"$ {' '.join(argv)}\n".encode())
    log.flush()
    done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=BUILD_TIMEOUT_S, **kwargs)
    if done.returncode != 0:
        raise ImageError(f"{argv[0]} {argv[1]} failed (exit {done.returncode}); see {log.name}")


def _import_rootfs(root: Path, tag: str, log, env: dict) -> None:
    """``tar -C root -c . | docker import - tag``, as two argv processes."""
    log.write(f"$ tar -C {root} -c . | docker import - {tag}\n".encode())
    log.flush()
    tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    done = subprocess.run(["docker", "import", "-", tag], stdin=tar.stdout, stdout=log, stderr=log, env=env)
    tar.stdout.close()
    if tar.wait() != 0 or done.returncode != 0:
        raise ImageError(f"docker import of {root} failed; see {log.name}")


def build_base(config: dict, env: dict) -> Image:
    """The Debian base image, from Debian's packages (no image registry)."""
    base = docker_settings(config).get("base") or {}
    suite, mirror = base.get("suite", "bookworm"), base.get("mirror", "http://deb.debian.org/debian")
    cas = sorted(HOST_CAS.glob("*.crt")) if HOST_CAS.is_dir() else []
    digest = hashlib.sha256((sources_list(mirror, suite) + "".join(p.read_text() for p in cas)).encode()).hexdigest()
    tag = f"{base.get('image', 'serverbench/debian')}:{suite}-{digest[:12]}"

    def make(log) -> None:
        if shutil.which("debootstrap") is None:
            raise ImageError("debootstrap is not installed: run scripts/install --docker")
        with tempfile.TemporaryDirectory(prefix="rootfs-", dir=state_dir(config)) as tmp:
            root = Path(tmp) / "root"
            _run_logged(debootstrap_argv(suite, root, mirror), log, env)
            (root / "etc/apt/sources.list").write_text(sources_list(mirror, suite))
            (root / HOST_CAS.relative_to("/")).mkdir(parents=True, exist_ok=True)
            for ca in cas:
                shutil.copy(ca, root / HOST_CAS.relative_to("/") / ca.name)
            _import_rootfs(root, tag, log, env)

    return _ensure(config, tag, digest, make, env)


def build_servers(config: dict, language: str, env: dict) -> Image:
    """The image a server of ``language`` runs in: base + its Dockerfile, tagged by digest."""
    spec = (docker_settings(config).get("images") or {}).get(language)
    if not spec:
        raise ImageError(f"no docker.images entry for {language!r}")
    base = build_base(config, env)
    dockerfile = REPO_ROOT / spec["dockerfile"]
    with tempfile.TemporaryDirectory(prefix="context-", dir=state_dir(config)) as tmp:
        context = with_sources(REPO_ROOT / spec.get("context", "envs"), spec.get("sources") or {}, Path(tmp))
        digest = context_digest(context, extra=base.tag + dockerfile.read_text())
        tag = f"{spec['image']}:{digest[:12]}"
        argv = [
            "docker",
            "build",
            "--network",
            "host",
            "--build-arg",
            f"BASE={base.tag}",
            "--label",
            f"serverbench.digest={digest}",
            "--tag",
            tag,
            "--file",
            str(dockerfile),
            str(context),
        ]
        return _ensure(config, tag, digest, lambda log: _run_logged(argv, log, env), env)


def with_sources(context: Path, sources: dict[str, str], tmp: Path) -> Path:
    """The build context: ``context`` plus, under ``sources/``, each host file of
    ``sources`` that exists (a source tarball scripts/install verified, such as
    NGINX Unit's: built inside the image, never downloaded there). The image's
    digest covers them, so it is rebuilt when one appears or changes."""
    present = {name: Path(path) for name, path in sources.items() if Path(path).is_file()}
    if not present:
        return context
    copy = tmp / "context"
    shutil.copytree(context, copy)
    (copy / "sources").mkdir()
    for name, path in present.items():
        shutil.copy(path, copy / "sources" / name)
    return copy


def _ensure(config: dict, tag: str, digest: str, make, env: dict) -> Image:
    """The image ``tag`` if the engine has it, else made once (a lock serialises builders)."""
    logs = state_dir(config) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"{tag.replace('/', '_').replace(':', '-')}.log"
    with open(logs / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if image_id(tag, env):
            return Image(tag, digest, built=False, build_s=None, log=str(log_path) if log_path.exists() else None)
        started = time.monotonic()
        with open(log_path, "wb") as log:
            make(log)
        return Image(tag, digest, built=True, build_s=round(time.monotonic() - started, 1), log=str(log_path))


def describe(image: Image) -> dict:
    return asdict(image)
