"""How a deployed server is stopped, as its deployed file says it (issue 94): the catalogue's
``stop`` (its graceful signal, its fast one, the setting bounding a graceful stop and its
default) read against the objective, and the delay a deployment behind a balancer needs
before the signal (its deregistration: a preStop sleep, the profile's
``advise.drain_delay_s``). Nothing here is typed per server: a server's entry says it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from serverbench.plan.catalogue import Stop

DEFAULT_DELAY_S = 5.0  # the schema's default of advise.drain_delay_s


@dataclass(frozen=True)
class Drain:
    """A server's stop as deployed: the signal to send, what bounds it, the delay before it."""

    declared: bool  # the catalogue declares its stop
    graceful_signal: str | None  # None: it has no graceful stop by a signal
    fast_signal: str | None
    timeout_setting: str | None
    timeout_default_s: float | None
    timeout_s: float | None  # the bound the deployed file keeps (None: it waits for every request)
    delay_s: float
    objective_p99_ms: float
    note: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def signal(self) -> str | None:
        """The signal a deployment stops it with: its graceful one, else the fast one."""
        return self.graceful_signal or self.fast_signal

    def lines(self) -> list[str]:
        """The stop in words, a line each, for the deployed file's comments."""
        if not self.declared:
            return ["Stopping it: the catalogue declares no `stop` for it; how it drains is not known here."]
        wait = (
            f"Behind a balancer, take it out of the pool and wait {self.delay_s:g} s before the signal "
            "(a preStop sleep: the balancer's deregistration), or requests still routed to it are refused."
        )
        if self.graceful_signal is None:
            note = f"; {self.note}" if self.note else ""
            return [
                f"Stopping it: it has no graceful stop by a signal: SIG{self.fast_signal} ends it at once, "
                f"cutting the requests it holds{note}.",
                wait + " Then wait for the requests it holds to end before the signal.",
            ]
        return [
            f"Stopping it: SIG{self.graceful_signal} is its graceful stop (it finishes the requests it holds, "
            f"then exits); SIG{self.fast_signal} ends it at once.",
            self._bound(),
            wait,
        ]

    def _bound(self) -> str:
        objective = f"the objective's p99 ({self.objective_p99_ms:g} ms)"
        if self.timeout_s is None:
            named = f"{self.timeout_setting} is unset by default: " if self.timeout_setting else ""
            return (
                f"{named}Nothing bounds its graceful stop: it waits for every request it holds, so the "
                "orchestrator's grace period must outlast the longest one."
            )
        if self.timeout_s == self.timeout_default_s:
            return (
                f"{self.timeout_setting} {self.timeout_s:g} s, its default, bounds the stop: longer than "
                f"{objective}, so no request the objective allows is cut."
            )
        return (
            f"{self.timeout_setting} {self.timeout_s:g} s bounds the stop: its default, {self.timeout_default_s:g} s, "
            f"is shorter than {objective}."
        )


def drain_of(stop: Stop | None, objective_p99_ms: float, delay_s: float = DEFAULT_DELAY_S) -> Drain:
    """The deployed stop of a server whose catalogue entry says ``stop`` (None: not declared)."""
    if stop is None:
        return Drain(False, None, None, None, None, None, delay_s, objective_p99_ms)
    timeout = None
    if stop.graceful is not None and stop.timeout_setting and stop.timeout_default_s is not None:
        # The bound must outlast a request the objective allows: the default, raised where shorter.
        timeout = max(stop.timeout_default_s, math.ceil(objective_p99_ms / 1000))
    return Drain(
        declared=True,
        graceful_signal=stop.graceful,
        fast_signal=stop.fast,
        timeout_setting=stop.timeout_setting,
        timeout_default_s=stop.timeout_default_s,
        timeout_s=timeout,
        delay_s=delay_s,
        objective_p99_ms=objective_p99_ms,
        note=stop.note,
    )
