"""The toy lens's record: a server's answers' sizes in bytes, frozen and versioned."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from serverbench.record.vocabulary import Status

SCHEMA = "toy_bytes/1"


@dataclass(frozen=True)
class BytesRecord:
    schema: str
    profile: str
    server: str
    status: Status
    reason: str | None
    sizes: tuple[int, ...]

    def to_dict(self) -> dict:
        return asdict(self)


def load(data: dict) -> BytesRecord:
    if data.get("schema") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} record: {data.get('schema')!r}")
    return BytesRecord(**{**data, "status": Status(data["status"]), "sizes": tuple(data["sizes"])})
