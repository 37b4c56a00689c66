"""The objective search's settings, one definition for every lens that measures capacity at a
p99 objective (``cell.objective``): their schema fragment (workflow/schemas/
objective_search.schema.yaml, which a lens's settings schema places with its own defaults) and
their typed class, parsed once in plan from the validated settings."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from serverbench import REPO_ROOT

SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "objective_search.schema.yaml"
# The keyword a lens's settings schema places the fragment with (plan.schema expands it).
KEYWORD = "objective_search"


@dataclass(frozen=True)
class ObjectiveSearch:
    """How capacity at the objective is searched (cell.objective's docstring): the objective, the
    closed loop the rates start from, the open-loop runs and when bisecting stops."""

    objective_p99_ms: float
    tool: str  # the open-loop tool offering the rates
    peak_tool: str  # the closed-loop tool whose rate they start from
    peak_s: float
    step_s: float
    max_step_s: float
    tail_samples: int
    rate_steps: int
    resolution: float
    max_connections: int

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls, data: dict) -> ObjectiveSearch:
        """Its keys of a lens's validated settings (the lens's other keys left to it)."""
        return cls(**{key: data[key] for key in cls.keys()})

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
