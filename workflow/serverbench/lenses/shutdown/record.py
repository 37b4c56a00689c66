"""The shutdown lens's record: one server's stops under load, frozen and versioned
(``SHUTDOWN_SCHEMA``), written once when its job ends. Each stop keeps every request that was
not answered (``failures``: when it was sent and ended, relative to the signal, what it met) and
the answered ones counted by client, before and after the signal (a closed loop answers tens of
thousands a stop): the tables' counts are made from these, and a later reading may count the
failures otherwise."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from serverbench.record.vocabulary import Status

SHUTDOWN_SCHEMA = "serverbench.shutdown/1"


@dataclass(frozen=True)
class Request:
    """One request of a stop: sent and ended in seconds from the signal (negative: before it),
    what it met, by which client and which of its connections, on a reused connection or not."""

    sent_s: float
    ended_s: float
    met: str
    client: str
    connection: int = 0
    reused: bool = False


@dataclass(frozen=True)
class Stop:
    """One start of the server, loaded, then stopped: how, by which signal, with how long the
    clients kept sending after it (``delay_s``: a balancer still routing to it), bare or behind
    the front, alone or replaced by a second instance."""

    round: int
    how: str
    signal: str | None
    delay_s: float
    status: Status = Status.OK
    reason: str | None = None
    # Where it stood (words.Placement) and what took over while it stopped (words.Handover).
    placement: str = "bare"
    handover: str = "none"
    # Seconds from the stop's beginning (its signal; a drain's first control request) to its
    # signal (a drain's: its delay; None: not sent), its listening socket gone (sock_diag), its
    # last correct answer, every process of it gone; None where it did not happen before the
    # lens stopped waiting.
    signal_s: float | None = None
    listener_closed_s: float | None = None
    last_answer_s: float | None = None
    exited_s: float | None = None
    exit_code: int | None = None  # the main process's (negative: ended by that signal)
    killed: bool = False  # still running when the lens stopped waiting, then killed
    # The open loop's requests a second (share of the closed loops' answered rate; None: none).
    open_rate: float | None = None
    open_lag_s: float | None = None  # the longest a due open-loop request waited for a sender
    # A request longer than the graceful timeout, sent before the signal (None: not asked).
    long_request: dict | None = None
    answered: dict = field(default_factory=dict)  # {client: {"before": n, "after": n}}
    failures: tuple[Request, ...] = ()


@dataclass(frozen=True)
class ShutdownResult:
    schema: str
    profile: str
    server: str
    language: str
    workload: str
    status: Status = Status.OK  # skipped or failed: the server could not be started at all
    reason: str | None = None
    stop_spec: dict | None = None  # the catalogue's `stop`, None: not declared
    stops: tuple[Stop, ...] = ()
    seconds: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    settings: dict = field(default_factory=dict)  # the profile's `shutdown` as the job read it

    def to_dict(self) -> dict:
        """As written to JSON (the stops and their failures lists)."""
        stops = [{**asdict(stop), "failures": [asdict(one) for one in stop.failures]} for stop in self.stops]
        return {**asdict(self), "stops": stops}
