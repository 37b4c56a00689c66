"""The idle-pool lens's settings, typed (a profile's ``idle_pool``: settings.schema.yaml beside
this file): the pool, the idle times swept and how failed reuses are read."""

from __future__ import annotations

from dataclasses import dataclass

from serverbench.plan.shapes import LensSettings


@dataclass(frozen=True)
class IdlePoolSettings(LensSettings):
    connections: int
    factors: tuple[float, ...]
    raise_factor: float
    max_keepalive_s: float
    timeout_s: float
    fresh_wait_s: float
    margin: float
