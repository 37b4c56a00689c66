"""Deployments behind a front: a catalogue entry ``SERVER+FRONT`` for every server whose
``behind`` speaks a protocol of a front in config ``fronts`` (docs/front.md), made when the
config is read, so every lens measures it like any server."""

from __future__ import annotations

import copy

FRONTED = "{server}+{front}"  # a deployment's name: an app server behind a front
BACKEND_SOCKET = "{rundir}/backend.sock"  # where every app server behind a front accepts (its `behind`)


def fronted_name(server: str, front: str) -> str:
    return FRONTED.format(server=server, front=front)


def fronted_entry(name: str, entry: dict, front_name: str, front: dict) -> dict:
    """The catalogue entry of ``name`` behind ``front``: its ``behind`` command as the backend,
    the front's command before it, the front's template for the protocol as front.conf."""
    protocol = entry["behind"]["protocol"]
    # Its recycling too: the argv that sets it goes to the backend (lenses.recycle).
    keys = (
        "language",
        "version",
        "interpreter",
        "interpreter_from_log",
        "env",
        "workloads",
        "expect",
        "timeouts",
        "recycle",
    )
    return {
        **{key: entry[key] for key in keys if key in entry},
        "description": f"{name} behind {front_name} ({protocol} on a Unix socket)",
        "command": list(front["command"]),
        "backend": list(entry["behind"]["command"]),
        "backend_socket": BACKEND_SOCKET,
        "files": {"front.conf": front["protocols"][protocol]},
        "fronted": {
            "server": name,
            "front": front_name,
            "protocol": protocol,
            "upstream_keepalive": protocol in (front.get("upstream_keepalive") or []),
            "workers": front.get("workers", 1),
            "timeouts": dict(front.get("timeouts") or {}),
            **({"version": list(front["version"])} if front.get("version") else {}),
        },
    }


def expand_fronts(config: dict) -> None:
    """A deployment SERVER+FRONT for every catalogue server with ``behind`` and every front of
    ``fronts`` speaking its protocol (an entry of that name written in the catalogue wins)."""
    catalogue = config.get("catalogue") or {}
    for front_name, front in (config.get("fronts") or {}).items():
        if not isinstance(front, dict):
            continue
        for name, entry in list(catalogue.items()):
            behind = entry.get("behind") if isinstance(entry, dict) else None
            if not isinstance(behind, dict) or behind.get("protocol") not in (front.get("protocols") or {}):
                continue
            catalogue.setdefault(fronted_name(name, front_name), fronted_entry(name, entry, front_name, front))


def without_upstream_keepalive(config: dict, server: str) -> dict:
    """The config with the front of deployment ``server`` opening a connection to its app server
    for every request (lenses.recycle: what a server that counts connections sees then)."""
    changed = copy.deepcopy(config)
    changed["catalogue"][server]["fronted"]["upstream_keepalive"] = False
    return changed


def is_fronted(entry: dict) -> bool:
    return "fronted" in entry
