"""The raw output of a job's load-tool runs, kept beside its record (advise, front)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RawLog:
    """The raw output of every load-tool run of a job, one file, each run after a header."""

    path: str
    runs: int = 0

    def add(self, header: str, text: str) -> str:
        self.runs += 1
        line = f"=== serverbench run {self.runs}: {header}"
        with open(self.path, "a") as raw:
            raw.write(f"{line}\n{text}\n")
        return line
