"""The shutdown lens's settings, typed (a profile's ``shutdown``: settings.schema.yaml beside this
file): how many stops, the delays the clients keep sending after the signal, the closed loops'
connections, open-loop clients at a share of their rate, the load before the signal, the waits,
a request longer than the graceful timeout, and the stops behind the front and the replacements
on one host (their delay)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from serverbench.plan.shapes import LensSettings


@dataclass(frozen=True)
class LongRequest(LensSettings):
    """A request on its own connection, sent before the signal, answered slower than the server's
    graceful timeout: a path of the profile's app and how long the client waits for it."""

    path: str
    timeout_s: float


@dataclass(frozen=True)
class OpenLoopSettings(LensSettings):
    """Open-loop clients beside the closed loops: requests started at ``share`` of the rate the
    closed loops were answered at during the load, by ``senders`` threads."""

    share: float
    senders: int = 16


@dataclass(frozen=True)
class ShutdownSettings(LensSettings):
    rounds: int
    delays: tuple[float, ...]
    fast: bool
    drain: bool
    keepalive: int
    fresh: int
    load_s: float
    timeout_s: float
    exit_wait_s: float
    fronted: bool = False
    replace: tuple[str, ...] = ()
    handover_delay_s: float = 1.0
    long_request: LongRequest | None = None
    open_loop: OpenLoopSettings | None = None
    deploy_lost_per_stop: float = 0  # more lost at its best graceful stop rules the server out of a deployment

    @classmethod
    def from_dict(cls, data) -> ShutdownSettings:
        long, open_loop = data.get("long_request"), data.get("open_loop")
        return dataclasses.replace(
            super().from_dict(data),
            long_request=LongRequest.from_dict(long) if long else None,
            open_loop=OpenLoopSettings.from_dict(open_loop) if open_loop else None,
        )
