"""The toy lens's settings, typed (a profile's ``toy_bytes``: settings.schema.yaml beside this file)."""

from __future__ import annotations

from dataclasses import dataclass

from serverbench.plan.shapes import LensSettings


@dataclass(frozen=True)
class ToyBytesSettings(LensSettings):
    answers: int  # answers counted per server
