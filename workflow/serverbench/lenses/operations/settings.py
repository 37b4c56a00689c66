"""The operations lens's settings, typed (a profile's ``operations``: settings.schema.yaml beside
this file): the lives, the worker counts a worker's cost is read over, the reloads under load
and a scaling server's step of load."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from serverbench.plan.shapes import LensSettings


@dataclass(frozen=True)
class LoadStep:
    """A scaling server's step of load: idle, loaded, idle again, sampled every ``every_s``."""

    idle_s: float
    load_s: float
    after_s: float
    every_s: float


@dataclass(frozen=True)
class OperationsSettings(LensSettings):
    rounds: int
    workers: tuple[int, ...]
    slope_rounds: int | None
    idle_s: float
    reloads: int
    reload_every: float
    concurrency: int
    step: LoadStep | None
    deploy_failed_per_reload: float = 0  # more failed per reload rules the server out of a deployment

    @classmethod
    def from_dict(cls, data) -> OperationsSettings:
        step = data.get("step")
        return dataclasses.replace(super().from_dict(data), step=LoadStep(**step) if step else None)

    @property
    def reload_plan(self) -> dict:
        """The reloads under load as cell.underload reads them."""
        return {"reloads": self.reloads, "reload_every": self.reload_every, "concurrency": self.concurrency}
