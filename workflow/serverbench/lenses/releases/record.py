"""The releases lens's words: how a check of categories came out between two releases
(release_verdicts.csv's `outcome` for conformance's checks met), its ``lens.Words``."""

from __future__ import annotations

from enum import StrEnum


class ReleaseOutcome(StrEnum):
    """A check of categories (conformance's met or not) between two releases."""

    CHANGED = "changed"  # some check came out otherwise
    SAME = "same"  # every check came out the same
