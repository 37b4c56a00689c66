"""The units the records' tables and sentences use: a record holds bytes, a table says MB."""

from __future__ import annotations

MB = 1024 * 1024  # the record holds bytes; its tables and sentences say MB


def megabytes(value: int | None) -> float | None:
    """Bytes of the record as the tables write them: MB to one decimal (None stays None)."""
    return None if value is None else round(value / MB, 1)
