"""The idle-pool lens's words (its ``lens.Words``), written to its verdict table."""

from enum import StrEnum


class IdlePoolKind(StrEnum):
    # Reuses at one idle time against the shortest swept, or the raised keep-alive against the default.
    IDLE_POOL = "idle pool"


class IdlePoolMetric(StrEnum):
    FAILED_REUSES = "failed reuses"  # the share of a pool's reuses reset or closed before the answer
