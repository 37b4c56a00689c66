"""The shutdown lens's own words: what a request met while its server was stopped, how the server
was stopped, and its verdicts' kind and metric (declared in its ``lens.Words``, checked against
every other lens's when the registry loads). Kept in the lens's folder (not record.vocabulary):
no other part reads them."""

from __future__ import annotations

from enum import StrEnum


class ShutdownKind(StrEnum):
    """The lens's kind of comparison (its ``lens.Words``)."""

    STOP = "stop"  # a server stopped one way against itself stopped another (decide)
    FRONTED_STOP = "fronted stop"  # stopped behind the front against bare, alone both
    REPLACEMENT = "replacement"  # replaced through SO_REUSEPORT against the stop alone
    UPSTREAM_RETRY = "upstream retry"  # replaced behind the front: the front's retry on against off


class ShutdownMetric(StrEnum):
    """What the lens judges a comparison on (its ``lens.Words``)."""

    SHUTDOWN = "shutdown"  # the requests lost per stop (decide.CHECK)


class Met(StrEnum):
    """What one request met, from the client's side (docs/shutdown.md)."""

    ANSWERED = "answered"  # a whole answer with the expected status
    BAD_STATUS = "bad status"  # a whole answer with another status (a 502 or 503 while it stops)
    # Accepted by the server (seen owned by one of its processes), then closed or reset before a
    # whole answer: the request it was serving cut.
    RESET_IN_FLIGHT = "reset in flight"
    # Connected at the kernel but never accepted by the server, then reset: dropped from the
    # listener's accept queue (gunicorn#3397).
    RESET_IN_QUEUE = "reset in the accept queue"
    REFUSED = "refused"  # no connection at all: the listener had closed
    # A kept-alive connection closed or reset before the next answer, though the last answer had
    # not said `Connection: close` (a client may retry an idempotent request on another one).
    KEEPALIVE_CLOSED = "keep-alive closed"
    TIMED_OUT = "timed out"  # no answer within the client's timeout


# Every outcome but an answer loses the request; in this order in the tables.
LOST = (
    Met.BAD_STATUS,
    Met.RESET_IN_FLIGHT,
    Met.RESET_IN_QUEUE,
    Met.REFUSED,
    Met.KEEPALIVE_CLOSED,
    Met.TIMED_OUT,
)


class How(StrEnum):
    """Which of the server's declared stops was sent (the catalogue's `stop`)."""

    GRACEFUL = "graceful"  # its graceful signal alone
    FAST = "fast"
    # The server's own "stop accepting" first (its control requests: Unit's listener, then its
    # application, removed), the graceful signal once the delay still routed has passed.
    DRAIN = "drain"


class Placement(StrEnum):
    """Where the stopped server stood: the clients' own address, or behind the nginx front."""

    BARE = "bare"
    # Behind the front (its deployment SERVER+nginx): the app server stopped, the front left
    # running, the clients sending to the front.
    FRONTED = "fronted"


class Handover(StrEnum):
    """What took over while the server stopped: nothing, or a second instance of it started
    while the first served (a replacement on one host)."""

    NONE = "none"
    # Both bound to the same port with SO_REUSEPORT (the catalogue's stop.reuse_port).
    REUSE_PORT = "reuse_port"
    # The second a second upstream of the front; the front retries a request the stopped one
    # failed on the other (its `*_next_upstream error timeout`, nginx's default) or does not (off).
    UPSTREAM_RETRY = "second upstream, retried"
    UPSTREAM_NO_RETRY = "second upstream, not retried"


class Client(StrEnum):
    """How a client connects and paces its requests."""

    KEEPALIVE = "keep-alive"  # closed loop: one connection kept for request after request
    FRESH = "fresh"  # closed loop: a connection per request
    # Open loop: a connection per request, each started on a schedule at a share of the rate
    # the closed loops were answered at, whether or not the ones before it were answered.
    OPEN = "open loop"


NO_REUSE_PORT = "the catalogue declares no SO_REUSEPORT option for this server (its stop.reuse_port)"
NO_FRONT = "the server has no deployment behind a front (the catalogue's behind)"
NOT_DECLARED = "the catalogue declares no stop for this server"
NO_GRACEFUL = "the server has no graceful stop (the catalogue's stop.graceful: none)"
