"""A server's recycling as its command takes it: the catalogue's ``recycle`` argvs filled with a
setting (a limit, its spread over workers, the floor on a worker's age), or why the server cannot
take it; the config with those argvs added to a server's command; and the limit in force. The
recycle lens measures each setting this way, and advise searches (and deploys) with a fixed one.
"""

from __future__ import annotations

import copy

from serverbench.plan.catalogue import Recycle

NO_RECYCLING = "the catalogue declares no recycling for this server (its entry's `recycle`)"
NO_JITTER = "the catalogue declares no argv that spreads this server's limit (`recycle.jitter`)"
NO_FLOOR = "the catalogue declares no floor on this server's worker age (`recycle.min_lifetime`)"
NO_RSS = "the catalogue declares no argv that restarts this server's workers by memory (`recycle.rss`)"


def recycling_argv(
    recycle: Recycle | None,
    max_requests: int | None,
    jitter: int = 0,
    min_lifetime_s: float | None = None,
    rss_mb: int | None = None,
) -> tuple[list[str], str | None]:
    """What a setting adds to the server's command (nothing where it sets neither a limit nor
    a memory bound: the server's own), or why the server cannot take it."""
    if max_requests is None and rss_mb is None:
        return [], None
    if recycle is None:
        return [], NO_RECYCLING
    if jitter and not recycle.jitter:
        return [], NO_JITTER
    if min_lifetime_s is not None and not recycle.min_lifetime:
        return [], NO_FLOOR
    if rss_mb is not None and not recycle.rss:
        return [], NO_RSS
    if recycle.in_templates:
        return [], None  # nothing on the command line: its templates take the limit (``template_vars``)
    values = {
        "{max_requests}": str(max_requests),
        "{max_requests_jitter}": str(jitter),
        "{min_worker_lifetime}": f"{min_lifetime_s:g}" if min_lifetime_s is not None else "",
        "{reload_on_rss_mb}": str(rss_mb),
    }
    argv = [
        *(recycle.limit if max_requests is not None else ()),
        *(recycle.jitter if jitter else ()),
        *(recycle.min_lifetime if min_lifetime_s is not None else ()),
        *(recycle.rss if rss_mb is not None else ()),
    ]
    for placeholder, value in values.items():
        argv = [part.replace(placeholder, value) for part in argv]
    return argv, None


def with_argv(config: dict, server: str, argv: list[str], max_requests: int | None = None) -> dict:
    """The config with ``argv`` added to the server's command (to its backend's behind a front),
    and, for a server whose templates take the limit, ``max_requests`` among their variables."""
    in_templates = bool((config["catalogue"][server].get("recycle") or {}).get("in_templates"))
    if not argv and not (in_templates and max_requests is not None):
        return config
    changed = copy.deepcopy(config)
    entry = changed["catalogue"][server]
    if argv:
        key = "backend" if entry.get("backend") else "command"
        entry[key] = [*entry[key], *argv]
    if in_templates and max_requests is not None:
        entry["template_vars"] = {**(entry.get("template_vars") or {}), "max_requests": max_requests}
    return changed


def limit_in_force(recycle: Recycle | None, max_requests: int | None) -> int | None:
    """The limit a worker restarts at: the one set, else the server's default (None: never)."""
    if max_requests is not None:
        return max_requests
    return recycle.default if recycle else None
