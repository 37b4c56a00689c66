"""The advise lens's settings, typed (a profile's ``advise``: settings.schema.yaml beside this
file): the objective search every setting is measured by, the memory budget, the walk's
points, the reload check, the CPU limit the server runs under and the drain delay its deployed
file says."""

from __future__ import annotations

from dataclasses import dataclass

from serverbench.plan.objective import ObjectiveSearch
from serverbench.plan.shapes import LensSettings


@dataclass(frozen=True)
class FixedRecycling:
    """The recycling every setting runs with and the deployed configuration carries."""

    max_requests: int
    jitter: int = 0


@dataclass(frozen=True)
class AdviseSettings(LensSettings):
    search: ObjectiveSearch  # its keys stand at the top of `advise`, beside the others
    memory_budget_mb: float | None
    recycle: FixedRecycling | None
    margin: float
    max_points: int
    extend_points: int
    reloads: int
    reload_every: float
    reload_concurrency: int
    cpu_limit: float | None = None  # CPUs' worth of time (cgroup quota); None: whole CPUs
    drain_delay_s: float | None = None  # None: drain.DEFAULT_DELAY_S

    @classmethod
    def from_dict(cls, data) -> AdviseSettings:
        own = {key: value for key, value in data.items() if key not in ObjectiveSearch.keys()}
        recycle = own.pop("recycle", None)
        return cls(
            search=ObjectiveSearch.from_dict(data),
            recycle=FixedRecycling(**recycle) if recycle else None,
            **own,
        )

    def to_dict(self) -> dict:
        out = super().to_dict()
        # Keys declared later, absent: left out, so the digests of cells stored before them hold.
        for key in ("cpu_limit", "drain_delay_s"):
            if out[key] is None:
                out.pop(key)
        return {**out.pop("search"), **out}

    @property
    def memory_budget_bytes(self) -> int | None:
        from serverbench.record.units import MB

        return None if self.memory_budget_mb is None else int(self.memory_budget_mb * MB)
