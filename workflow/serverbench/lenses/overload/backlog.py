"""The listen backlog as a condition: a server at its own (its argv without ``{backlog}``: what it
does when not told) and at the profile's, with ``net.core.somaxconn`` raised to it for the run (the
kernel caps every backlog at it) and restored after."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from pathlib import Path

from serverbench.cell.launch import templates_text
from serverbench.lenses.overload.words import NO_OWN_BACKLOG
from serverbench.plan.catalogue import server_entry

PLACEHOLDER = "{backlog}"
SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


def without_backlog(argv: list) -> list:
    """``argv`` without the backlog: a ``--flag, "{backlog}"`` pair, or a ``--flag={backlog}`` word."""
    out = []
    for word in map(str, argv):
        if word == PLACEHOLDER:
            if out and out[-1].startswith("-"):
                out.pop()
            continue
        if PLACEHOLDER not in word:
            out.append(word)
    return out


def own_backlog_config(config: dict, server: str) -> tuple[dict | None, str | None]:
    """The config with the server's command (and backend) not told the backlog; (None, why) where
    its templates or environment set it (no argv leaves it to the server)."""
    entry = server_entry(config, server)
    if PLACEHOLDER in templates_text(entry) or any(PLACEHOLDER in str(v) for v in entry.env.values()):
        return None, NO_OWN_BACKLOG
    changed = copy.deepcopy(config)
    spec = changed["catalogue"][server]
    for key in ("command", "backend"):
        if spec.get(key):
            spec[key] = without_backlog(spec[key])
    return changed, None


@contextlib.contextmanager
def raised_somaxconn(backlog: int | None, path: Path = SOMAXCONN) -> Iterator[dict | None]:
    """somaxconn at least ``backlog`` while inside, restored after: what was, what it ran with and
    whether it could be raised (a user that may not write it runs with what there is). None:
    nothing asked."""
    if backlog is None:
        yield None
        return
    before = int(path.read_text()) if path.exists() else None
    raised = False
    if before is not None and before < backlog:
        try:
            path.write_text(f"{backlog}\n")
            raised = True
        except OSError:
            pass
    try:
        yield {"before": before, "during": int(path.read_text()) if path.exists() else None, "raised": raised}
    finally:
        if raised:
            path.write_text(f"{before}\n")
