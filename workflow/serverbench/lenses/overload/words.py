"""The overload lens's own words: what a request met past a server's capacity, how its client
connected, which backlog the server listened with, and its kind and metric (declared in its
``lens.Words``). Kept in the lens's folder: no other part reads them."""

from __future__ import annotations

from enum import Enum, StrEnum

from serverbench.record.vocabulary import Outcome


class OverloadKind(StrEnum):
    """The lens's kind of comparison (its ``lens.Words``)."""

    PAST_CAPACITY = "past capacity"  # a server's goodput past its capacity against its capacity
    BACKLOG = "own backlog"  # a server's goodput at its own listen backlog against at the set one


class OverloadMetric(StrEnum):
    """What the lens judges on (its ``lens.Words``)."""

    GOODPUT = "goodput past capacity"  # answers within the objective per second, offered beyond capacity
    RECOVERY = "recovery after the burst"  # seconds until the after-rate is met again


class OverloadOutcome(StrEnum):
    """The lens's outcomes beside the core's (its ``lens.Words``): how goodput past capacity is
    classed (with the core's ``holds``: ``GoodputClass``), and whether a server came back."""

    SHEDS = "sheds"  # goodput at the judged multiple between the collapse and hold shares of capacity
    COLLAPSES = "collapses"  # goodput below the collapse share of capacity
    RECOVERED = "recovered"  # the after-rate met again within the window after the burst
    NEVER_RECOVERED = "never recovered"  # not within the window


class GoodputClass(Enum):
    """What a server's goodput at the judged multiple of its capacity (2×) is classed, read by the
    one rule against the settings' shares (decide.py); each member's value its word in the tables."""

    HOLDS = Outcome.HOLDS  # at least the hold share of its capacity (the core's word)
    SHEDS = OverloadOutcome.SHEDS
    COLLAPSES = OverloadOutcome.COLLAPSES
    UNDETERMINED = Outcome.UNDETERMINED  # its interval across a share


class Met(StrEnum):
    """What one request met, counted at the client (docs/overload.md), in the tables' order."""

    WITHIN = "answered within the objective"
    LATE = "answered late"  # a 2xx-4xx answer slower than the objective, from when it was due
    SHED = "5xx"  # a 503 shed on purpose, or any other server error
    REFUSED = "refused"  # the connection refused (nothing listening, or a reset SYN)
    RESET = "reset"  # the connection reset or closed before a whole answer
    TIMED_OUT = "timed out"  # no connection or no answer within the client's timeout
    NEVER_SENT = "never sent"  # due at the offered rate, but the client could not send it
    OTHER = "other error"  # an error the client named that none of the above covers


class Client(StrEnum):
    """How the open-loop client connects."""

    FRESH = "fresh"  # a connection per request
    KEEPALIVE = "keep-alive"  # connections kept for request after request


class Backlog(StrEnum):
    """The listen backlog a server ran with."""

    OWN = "own"  # its argv without `{backlog}`: what it does when not told
    SET = "set"  # the profile's backlog, somaxconn raised to it for the run


class Phase(StrEnum):
    """A stretch of offered load."""

    STEADY = "steady"  # a multiple of capacity, held
    BURST = "burst"  # the burst's multiple for its seconds, then back to the after-multiple


NEVER_RECOVERED = "never within the window"
NO_OWN_BACKLOG = "the server's backlog is set in its templates or environment: no argv without it"
