"""Releases of a server as config (docs/releases.md): ``releases`` in config.yaml names a
package, the catalogue servers it provides and the versions to measure; each version of
each server becomes a catalogue entry ``SERVER@VERSION`` when the config is read, so every
lens measures it like any server. A version a profile or the command line names
(``--config servers=[gunicorn-gthread@21.2.0]``) is made the same way, declared or not.

Each version is installed (``serverbench.host.releases``) into a prefix of its own under
``releases_dir``: a virtual environment whose name carries the version and a digest of
where it comes from, never the harness's own environment with its pinned versions.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from serverbench.record.vocabulary import Kind

RELEASE = "{server}@{version}"
# A pair's kinds: a release against the baseline, and against the release before it.
RELEASE_KIND, STEP_KIND = Kind.RELEASE, Kind.RELEASE_STEP
NAME = re.compile(r"^(?P<server>[^@]+)@(?P<version>[A-Za-z0-9_.+-]+)$")
# Keys a release does not take from its server: those that pair it with other servers
# (it is compared with its own releases), and its ways of running behind a front.
NOT_COPIED = ("product", "family", "behind", "alias_of", "variant_of", "fronted", "release")

if TYPE_CHECKING:  # pandas costs every job that reads the config 0.2 s of import; only compare needs it
    import pandas as pd


class ReleaseError(ValueError):
    """A release named that no package of ``releases`` provides."""


def release_name(server: str, version: str) -> str:
    return RELEASE.format(server=server, version=version)


def split_name(name: str) -> tuple[str, str] | None:
    """(server, version) of ``SERVER@VERSION``, else None."""
    found = NAME.match(name)
    return (found["server"], found["version"]) if found else None


def base_server(name: str) -> str:
    """The catalogue server a release is of (the name itself for any other server)."""
    split = split_name(name)
    return split[0] if split else name


def ordered(versions) -> list[str]:
    """Versions oldest first (PEP 440 order; a version it cannot read sorts first, by name)."""

    def key(version: str):
        try:
            return (1, Version(version), "")
        except InvalidVersion:
            return (0, Version("0"), version)

    return sorted(dict.fromkeys(str(v) for v in versions), key=key)


def package_of(config: dict, server: str) -> str | None:
    """The package of ``releases`` that provides catalogue server ``server``."""
    for package, spec in (config.get("releases") or {}).items():
        if server in (spec.get("servers") or []):
            return package
    return None


def distribution_of(package: str, spec: dict) -> str:
    """The distribution pip installs for a package of ``releases`` (its ``pip``, else its name)."""
    return spec.get("pip") or package


def source_digest(spec: dict, package: str, version: str) -> str:
    """Eight hex digits naming where a release comes from: its requirement, its index
    options and the interpreter (a prefix is never reused for another source)."""
    source = {
        "requirement": f"{distribution_of(package, spec)}=={version}",
        "find_links": spec.get("find_links"),
        "index_url": spec.get("index_url"),
        "interpreter": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    return hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()[:8]


def prefix_of(config: dict, package: str, version: str) -> Path:
    spec = config["releases"][package]
    return Path(config["releases_dir"]) / f"{package}-{version}-{source_digest(spec, package, version)}"


def release_spec(config: dict, package: str, version: str) -> dict:
    """What installing one release needs (``plan.catalogue.Release``)."""
    spec = config["releases"][package]
    return {
        "package": package,
        "version": version,
        "requirement": f"{distribution_of(package, spec)}=={version}",
        "distribution": distribution_of(package, spec),
        "find_links": spec.get("find_links"),
        "index_url": spec.get("index_url"),
        "prefix": str(prefix_of(config, package, version)),
    }


def release_entry(config: dict, server: str, version: str) -> dict:
    """The catalogue entry of ``server`` at ``version``."""
    package = package_of(config, server)
    entry = config["catalogue"][server]
    baseline = config["releases"][package].get("baseline")
    return {
        **{key: value for key, value in entry.items() if key not in NOT_COPIED},
        "description": f"{server} at {package} {version}",
        "release": {
            **release_spec(config, package, version),
            "of": server,
            **({"baseline": str(baseline)} if baseline is not None else {}),
        },
    }


def named_releases(config: dict) -> dict[str, set[str]]:
    """Every version of every server: declared in ``releases`` and named by a profile or the
    ``servers`` override (server → versions)."""
    found: dict[str, set[str]] = {}
    for spec in (config.get("releases") or {}).values():
        for server in spec.get("servers") or []:
            found.setdefault(server, set()).update(str(v) for v in spec.get("versions") or [])
    lists = [config.get("servers") or []] + [p.get("servers") or [] for p in (config.get("profiles") or {}).values()]
    for names in lists:
        for name in names if isinstance(names, list) else []:
            split = split_name(str(name))
            if split:
                found.setdefault(split[0], set()).add(split[1])
    return found


def expand_releases(config: dict) -> None:
    """A catalogue entry ``SERVER@VERSION`` for every release of ``named_releases`` (an entry
    of that name written in the catalogue wins); a release of a server no package provides
    is an error."""
    catalogue = config.get("catalogue") or {}
    config.setdefault("releases_dir", "/opt/serverbench/releases")
    for server, versions in named_releases(config).items():
        if server not in catalogue or package_of(config, server) is None:
            provided = sorted(s for p in (config.get("releases") or {}).values() for s in p.get("servers") or [])
            raise ReleaseError(
                f"{server!r} has releases named ({', '.join(sorted(versions))}) but no package of `releases` "
                f"provides it (those provided: {', '.join(provided) or 'none'})"
            )
        for version in versions:
            catalogue.setdefault(release_name(server, version), release_entry(config, server, version))


def releases_in(config: dict, servers) -> list[dict]:
    """The release specs of the servers (each package and version once), for installing."""
    found = {}
    for server in servers:
        spec = config["catalogue"].get(server, {}).get("release")
        if spec:
            found[(spec["package"], spec["version"])] = spec
    return [found[key] for key in sorted(found)]


def install_record_name(spec: dict) -> str:
    """The file name of one release's install record in a run's results."""
    return f"{spec['package']}@{spec['version']}.json"


def versions_of(config: dict, servers) -> dict[str, list[str]]:
    """Each released server among ``servers``: its release names, oldest version first."""
    by_server: dict[str, list[str]] = {}
    for server in servers:
        spec = config["catalogue"].get(server, {}).get("release")
        if spec:
            by_server.setdefault(spec["of"], []).append(spec["version"])
    return {server: [release_name(server, v) for v in ordered(versions)] for server, versions in by_server.items()}


def baseline_of(config: dict, names: list[str]) -> str:
    """Of one server's releases present (oldest first): the one the others are compared with,
    its package's ``baseline`` where present, else the newest."""
    named = config["catalogue"][names[0]]["release"].get("baseline")
    wanted = release_name(config["catalogue"][names[0]]["release"]["of"], named) if named else None
    return wanted if wanted in names else names[-1]


def release_pairs(config: dict, servers) -> list[tuple[str, str, str]]:
    """(kind, a, b) of the releases present: each against its baseline (``release``: a is the
    release, b the baseline) and each against the release before it (``release step``: a the
    newer, b the older: the change a release brought), a pair never twice."""
    pairs = []
    for names in versions_of(config, servers).values():
        if len(names) < 2:
            continue
        baseline = baseline_of(config, names)
        pairs += [(RELEASE_KIND, name, baseline) for name in names if name != baseline]
        against_baseline = {(a, b) for _, a, b in pairs} | {(b, a) for _, a, b in pairs}
        steps = [(newer, older) for older, newer in zip(names, names[1:], strict=False)]
        pairs += [(STEP_KIND, newer, older) for newer, older in steps if (newer, older) not in against_baseline]
    return pairs


def by_server_of_release(table: pd.DataFrame) -> pd.DataFrame:
    """A run's table with each release named by its server (``gunicorn-gthread@20.1.0`` as
    ``gunicorn-gthread``) where the run holds one release of that server and not the server
    itself, the release's name kept in ``release``: so ``compare`` matches two runs of two
    releases as two runs of two commits."""
    import pandas as pd

    if table is None or "server" not in table.columns:
        return table
    servers = pd.Series(table["server"].unique())
    bases = servers.map(base_server)
    counts = bases.value_counts()
    renamed = {s: b for s, b in zip(servers, bases, strict=True) if s != b and counts[b] == 1}
    return table.assign(release=table["server"], server=table["server"].replace(renamed))
