"""One shape for a judgement: a comparison made once, read as fields.

A ``Comparison`` holds everything a reader needs (the pair, its kind, the
metric it was judged on, the condition, the estimate and its interval at a
level, the margin, the outcome, the smallest ratio the run could have told,
and its reasons as ``Reason`` values). Readers turn it into a CSV row
(``as_row``), a sentence or a table row; none parses another's text. Modelled
on pyperf's ``CompareResult`` and hyperfine's relative speeds: computed once,
every exporter reads the same struct.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum

from serverbench.record.vocabulary import Kind, Metric, Outcome
from serverbench.tables.columns import CONDITION

# Short names for the vocabulary's members (record.vocabulary defines them, once).
SPEED, FAIRNESS, WORK, LATENCY = Metric.SPEED, Metric.FAIRNESS, Metric.WORK, Metric.LATENCY
FASTER, SLOWER, EQUIVALENT, UNDETERMINED = Outcome.FASTER, Outcome.SLOWER, Outcome.EQUIVALENT, Outcome.UNDETERMINED
PENDING, NOT_COMPARABLE = Outcome.PENDING, Outcome.NOT_COMPARABLE
MORE_WORK, LESS_WORK = Outcome.MORE_WORK, Outcome.LESS_WORK
# An operations check's (decide.operations): a's figure against b's, lower better for every check.
LOWER, HIGHER = Outcome.LOWER, Outcome.HIGHER


@dataclass(frozen=True)
class Reason:
    """Why a comparison came out as it did, or could not be made: a code a program
    can test and the words a reader gets."""

    code: str
    text: str


@dataclass(frozen=True)
class Comparison:
    kind: Kind | StrEnum  # same server, family, A/A, variant, ceiling, named, ... or a lens's own
    a: str
    b: str
    metric: Metric | StrEnum  # speed, fairness, work, latency, ... or a lens's own
    condition: tuple[tuple[str, str], ...]  # (column, value) pairs, e.g. (("profile", "default"), ...)
    outcome: Outcome | StrEnum
    estimate: float | None = None  # a / b
    a_value: float | None = None  # the figures compared (e.g. instructions per request)
    b_value: float | None = None
    low: float | None = None
    high: float | None = None
    level: float | None = None  # the interval's coverage, where it has one
    margin: float | None = None
    detectable_ratio: float | None = None
    reasons: tuple[Reason, ...] = field(default_factory=tuple)

    def __post_init__(self):
        # Typed end to end: a word of the core vocabulary becomes its member, any other word is
        # refused; a lens's own word comes as its member (``lens.Words``, checked by the registry).
        for name, vocabulary in (("kind", Kind), ("metric", Metric), ("outcome", Outcome)):
            word = getattr(self, name)
            if not isinstance(word, StrEnum):
                object.__setattr__(self, name, vocabulary(word))

    @property
    def decided(self) -> bool:
        return self.outcome not in (UNDETERMINED, NOT_COMPARABLE)

    @property
    def why(self) -> str:
        """The reasons in words, as a reader gets them."""
        return "; ".join(reason.text for reason in self.reasons)

    def as_row(self) -> dict:
        """The comparison as one CSV row: fields as columns, reasons joined for reading."""
        return {
            **dict(self.condition),
            "kind": self.kind,
            "a": self.a,
            "b": self.b,
            "metric": self.metric,
            "a_value": self.a_value,
            "b_value": self.b_value,
            "ratio": self.estimate,
            "ci_low": self.low,
            "ci_high": self.high,
            "level": self.level,
            "margin": self.margin,
            "outcome": self.outcome,
            "detectable_ratio": self.detectable_ratio,
            "reason_codes": ";".join(reason.code for reason in self.reasons),
            "why": self.why,
            # The reasons' words one by one (JSON), so that no reader splits ``why``.
            "reasons": json.dumps([reason.text for reason in self.reasons]) if self.reasons else None,
        }


@dataclass(frozen=True)
class Users:
    """What one side's users got where connections waited (runs.csv, medians over the rounds)."""

    answered_share: float | None = None
    connection_wait_p90_ms: float | None = None


@dataclass(frozen=True)
class TimedComparison(Comparison):
    """A comparison on time (req/s, fairness, latency under load): a ``Comparison`` with what
    the timed lens adds. ``a_value``/``b_value`` are each side's median (req/s, Jain's index,
    a knee or a p99); verdicts.csv calls them ``median_a``/``median_b``."""

    language_a: str | None = None
    language_b: str | None = None
    n_a: int | None = None
    n_b: int | None = None
    full_a: float | None = None  # the full-speed figures, where they decide
    full_b: float | None = None
    method: str | None = None
    p_value: float | None = None
    p_holm: float | None = None
    delivered_ratio: float | None = None  # what this machine delivered, beside the figure that decides
    delivered_low: float | None = None
    delivered_high: float | None = None
    rounds_needed: int | None = None  # at this host's noise, to decide an undetermined one
    fraction: float | None = None  # latency under load: of each one's own capacity
    offered_rps: float | None = None  # latency under load: one rate offered to both
    not_measured: tuple[tuple[str, str], ...] = ()  # (server, why it was skipped)
    only_not_measured: bool | None = None  # that is the only reason it was not made
    left_out: tuple[tuple[str, str], ...] = ()  # (server, reason code): not the best of its language
    users: tuple[Users, Users] | None = None  # fairness: what each side's users got

    @classmethod
    def of_pair(cls, kind: str, metric: str, condition: tuple, a, b, **fields) -> TimedComparison:
        """Two cells (anything with a ``server`` and a ``language``) at a condition of the timed
        tables (``tables.columns.CONDITION``'s values), not yet decided."""
        return cls(
            kind=kind,
            a=a.server,
            b=b.server,
            metric=metric,
            condition=tuple(zip(CONDITION, condition, strict=True)),
            outcome=PENDING,
            language_a=a.language,
            language_b=b.language,
            **fields,
        )

    def as_row(self) -> dict:
        """The verdicts.csv row (``sentence`` is the reader's, added beside)."""
        row = super().as_row()
        return {
            **row,
            "median_a": row.pop("a_value"),
            "median_b": row.pop("b_value"),
            "language_a": self.language_a,
            "language_b": self.language_b,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "full_a": self.full_a,
            "full_b": self.full_b,
            "method": self.method,
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "delivered_ratio": self.delivered_ratio,
            "delivered_ci_low": self.delivered_low,
            "delivered_ci_high": self.delivered_high,
            "rounds_needed": self.rounds_needed,
            "fraction": self.fraction,
            "offered_rps": self.offered_rps,
            "not_measured": json.dumps([list(pair) for pair in self.not_measured]) if self.not_measured else None,
            "only_not_measured": self.only_not_measured,
            "left_out": json.dumps([list(pair) for pair in self.left_out]) if self.left_out else None,
        }
