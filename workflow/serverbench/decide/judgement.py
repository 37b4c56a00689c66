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

from dataclasses import dataclass, field

from serverbench.decide.inference import UNDETERMINED, Estimate

# The metrics a comparison can be judged on, and the outcomes of its own: a timed
# comparison's faster and slower are inference's, as are equivalent and undetermined.
SPEED, FAIRNESS, WORK = "speed", "fairness", "work"
MORE_WORK, LESS_WORK, NOT_COMPARABLE = "more work", "less work", "not comparable"


@dataclass(frozen=True)
class Reason:
    """Why a comparison came out as it did, or could not be made: a code a program
    can test and the words a reader gets."""

    code: str
    text: str


@dataclass(frozen=True)
class Comparison:
    kind: str  # same server, family, A/A, variant, ceiling, named
    a: str
    b: str
    metric: str  # SPEED, FAIRNESS or WORK
    condition: tuple[tuple[str, str], ...]  # (column, value) pairs, e.g. (("profile", "default"), ...)
    outcome: str
    estimate: float | None = None  # a / b
    a_value: float | None = None  # the figures compared (e.g. instructions per request)
    b_value: float | None = None
    low: float | None = None
    high: float | None = None
    level: float | None = None  # the interval's coverage, where it has one
    margin: float | None = None
    detectable_ratio: float | None = None
    reasons: tuple[Reason, ...] = field(default_factory=tuple)

    @property
    def decided(self) -> bool:
        return self.outcome not in (UNDETERMINED, NOT_COMPARABLE)

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
            "why": "; ".join(reason.text for reason in self.reasons),
        }


@dataclass
class Pending:
    """A timed comparison's row before Holm's procedure sets its level, with the estimates
    that will then give its interval beside it (never inside it as hidden keys): the one it
    is decided on and the delivered req/s one; for a fairness row, what users got."""

    row: dict
    estimate: Estimate | None = None
    delivered: Estimate | None = None
    users: tuple[dict, dict] = ({}, {})
