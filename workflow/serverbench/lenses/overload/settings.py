"""The overload lens's settings, typed (a profile's ``overload``: settings.schema.yaml beside this
file): the objective search that finds each server's capacity, the multiples of it offered, the
clients, the burst and the recovery windows, the backlogs, the verdicts' multiple, repeats and
shares, and the hung request."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from serverbench.plan.objective import ObjectiveSearch
from serverbench.plan.shapes import LensSettings


@dataclass(frozen=True)
class Burst(LensSettings):
    """``multiple`` of capacity for ``seconds``, ``after`` of it throughout and ``after_s`` more;
    recovery read in windows of ``window_s`` (``share`` of those due answered within the objective)."""

    multiple: float
    seconds: float
    after: float
    after_s: float
    window_s: float
    share: float


@dataclass(frozen=True)
class Hang(LensSettings):
    """The hung request (hang.py): at ``multiple`` of capacity for ``seconds``, ``share`` of the
    requests to the apps' /hang asleep ``hang_s``; the server at its own request timeout and at
    ``timeout_s``."""

    share: float
    multiple: float
    seconds: float
    hang_s: float
    timeout_s: float


@dataclass(frozen=True)
class Judged(LensSettings):
    """The verdicts' settings: ``multiple`` of capacity offered ``repeats`` times by each client,
    its goodput as capacity's share classed holds at ``hold_share`` or more, collapses below
    ``collapse_share``, sheds between; own backlog against set, and a release against another, read
    against ``margin`` (all shares of capacity)."""

    multiple: float
    repeats: int
    hold_share: float
    collapse_share: float
    margin: float


@dataclass(frozen=True)
class OverloadSettings(LensSettings):
    search: ObjectiveSearch  # its keys stand at the top of `overload`, beside the others
    multiples: tuple[float, ...]
    hold_s: float
    clients: tuple[str, ...]
    client_shortfall: float
    timeout_s: float
    connect_timeout_s: float
    backlogs: tuple[str, ...]
    burst: Burst | None = None
    judged: Judged | None = None
    hang: Hang | None = None

    @classmethod
    def from_dict(cls, data) -> OverloadSettings:
        own = {key: value for key, value in data.items() if key not in ObjectiveSearch.keys()}
        burst, judged, hang = own.pop("burst", None), own.pop("judged", None), own.pop("hang", None)
        typed = LensSettings.from_dict.__func__(cls, {**own, "search": ObjectiveSearch.from_dict(data)})
        return dataclasses.replace(
            typed,
            burst=Burst.from_dict(burst) if burst else None,
            judged=Judged.from_dict(judged) if judged else None,
            hang=Hang.from_dict(hang) if hang else None,
        )

    def offered_multiples(self) -> tuple[float, ...]:
        """The multiples offered, in order: the judged one among them."""
        judged = {self.judged.multiple} if self.judged else set()
        return tuple(sorted({*self.multiples, *judged}))

    def times_offered(self, multiple: float) -> int:
        """Stretches of ``multiple`` a client offers: the judged one's repeats, once each other."""
        return self.judged.repeats if self.judged and multiple == self.judged.multiple else 1

    def to_dict(self) -> dict:
        out = super().to_dict()
        return {**out.pop("search"), **out}
