"""The deploy answer's words, as deploy.csv holds them."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """What a row of deploy.csv is."""

    RECOMMENDED = "recommended"  # a choice of the recommended deployment
    RULED_OUT = "ruled out"  # a candidate before it, and the finding that ruled it out
    NONE_LEFT = "none left"  # no candidate stood (or none was measured)


class Versus(StrEnum):
    """The recommended server against the runner-up, by their capacity intervals."""

    TOLD_APART = "told apart"  # the runner-up's interval lies wholly below
    EQUIVALENT = "not told apart"
    NONE_LEFT = "no runner-up"
