"""The keep-alive a deployed server sets behind a balancer that pools its connections, as its
deployed file says it: the catalogue's ``keepalive`` fact (``plan.catalogue.KeepAlive``: its
default, the setting a user changes) and one rule, set the keep-alive above the balancer's idle
timeout, balancer idle timeout + margin. A keep-alive at or below it lets the server close an
idle connection as the balancer sends on it: a reset, a 502 at the balancer (the idle-pool
profile measures that race per server: docs/front.md). Nothing here is typed per server."""

from __future__ import annotations

from dataclasses import dataclass

from serverbench.plan.catalogue import KeepAlive

# The balancer idle timeout the file works the rule through: an AWS ALB's default (60 s), the
# balancer most of these servers' users name; the margin covers a send late by a scheduling delay.
BALANCER_IDLE_TIMEOUT_S = 60.0
MARGIN_S = 5.0


@dataclass(frozen=True)
class KeepAliveAdvice:
    """A server's keep-alive behind a balancer: what to set for the balancer's idle timeout."""

    declared: KeepAlive | None
    balancer_idle_timeout_s: float = BALANCER_IDLE_TIMEOUT_S
    margin_s: float = MARGIN_S

    @property
    def to_set_s(self) -> float:
        """The rule: the balancer's idle timeout + the margin."""
        return self.balancer_idle_timeout_s + self.margin_s

    def lines(self) -> list[str]:
        """The rule in words, a line each, for the deployed file's comments."""
        if self.declared is None:
            return ["Keep-alive: the catalogue declares none for it; set it above a balancer's idle timeout."]
        own = self.declared
        return [
            f"Keep-alive: {own.said()}. Behind a balancer that pools connections, set {own.setting} above "
            f"the balancer's idle timeout: its idle timeout + {self.margin_s:g} s (an AWS ALB's "
            f"{self.balancer_idle_timeout_s:g} s: {own.setting} {self.to_set_s:g}).",
            "At or below it the server closes an idle connection as the balancer sends on it: a reset, "
            "a 502. Where an idle connection holds a worker or a thread, each costs one for the whole keep-alive.",
        ] + ([f"({own.note})"] if own.note else [])
