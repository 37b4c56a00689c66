"""The recycle lens's settings, typed (a profile's ``recycle``: settings.schema.yaml beside this
file): the settings measured beside the server's own, the clients and upstreams, the load and
its sampling, and the capacity with recycling against without (an objective search)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from serverbench.lenses.recycle.record import Setting
from serverbench.plan.objective import ObjectiveSearch
from serverbench.plan.shapes import LensSettings


def _setting(data: dict) -> Setting:
    return Setting(data.get("max_requests"), data.get("jitter") or 0, data.get("min_lifetime_s"), data.get("rss_mb"))


@dataclass(frozen=True)
class Capacity(LensSettings):
    """Capacity at the objective at the server's own recycling and at the first of ``settings``
    it can take, ``lives`` starts of each."""

    settings: tuple[Setting, ...]
    lives: int
    search: ObjectiveSearch

    @classmethod
    def from_dict(cls, data) -> Capacity:
        return cls(tuple(map(_setting, data["settings"])), data["lives"], ObjectiveSearch.from_dict(data))


@dataclass(frozen=True)
class RecycleSettings(LensSettings):
    settings: tuple[Setting, ...]
    clients: tuple[str, ...]
    upstream: tuple[str, ...]
    capacity: Capacity | None
    load_s: float
    concurrency: int
    sample_every_s: float
    window_s: float
    workload: str | None = None  # None: the profile's first
    deploy_failed_per_restart: float = 0  # more failed per restart rules recycling out of a deployment

    @classmethod
    def from_dict(cls, data) -> RecycleSettings:
        capacity = data.get("capacity")
        return dataclasses.replace(
            super().from_dict(data),
            settings=tuple(map(_setting, data["settings"])),
            capacity=Capacity.from_dict(capacity) if capacity else None,
        )
