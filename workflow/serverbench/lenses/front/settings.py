"""The front lens's settings, typed (a profile's ``front``: settings.schema.yaml beside this
file): the normal clients, the slow ones beside them and how their share is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from serverbench.plan.shapes import LensSettings


@dataclass(frozen=True)
class FrontSettings(LensSettings):
    tool: str
    clients: int
    duration_s: float
    settle_s: float
    rounds: int
    pace_s: float
    kinds: tuple[str, ...]
    counts: Mapping[str, tuple[str, ...]]  # by slow kind: fewer, as many, more
    body_bytes: int
    margin: float
    cost_margin: float
    starved_share: float
