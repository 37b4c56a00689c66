"""The margin a comparison is read against: the size of a difference a user calls
negligible. *Equivalent* means the whole interval lies within ±margin of 1;
*faster* and *slower* mean by more than it. The band depends on the question
(``Question``): two things measured in one run, or a change between two runs;
``side`` is the one rule that reads an interval against it, for every lens.

``comparisons.margin`` is a number (every kind) or a mapping of comparison
kind to number with a ``default``; a profile's own ``margin`` (the same
shapes) replaces it for that profile's comparisons. The margin is a floor
under every detectable ratio, so it is kept small (2%): for "Python or Perl
on the same server" a 5% floor hid every difference the question is about.
"""

from __future__ import annotations

from enum import Enum

from serverbench.record.vocabulary import Outcome

DEFAULT = "default"


def _pick(spec, kind: str) -> float | None:
    if spec is None:
        return None
    if isinstance(spec, int | float):
        return float(spec)
    return float(spec[kind]) if kind in spec else (float(spec[DEFAULT]) if DEFAULT in spec else None)


def margin_for(config: dict, profile: str | None, kind: str) -> float:
    """The margin of one comparison kind in one profile (None: the run-wide one)."""
    profile_spec = (config.get("profiles", {}).get(profile) or {}).get("margin") if profile else None
    chosen = _pick(profile_spec, kind)
    if chosen is None:
        chosen = _pick(config["comparisons"].get("margin", 0.02), kind)
    return 0.02 if chosen is None else chosen


def in_words(margin: float) -> str:
    """ "within ±2%": the margin as the page and answers.md state it."""
    return f"within ±{margin * 100:.3g}%"


def run_margins(verdicts) -> list[float]:
    """The distinct margins a verdict table was read against, most used first."""
    if "margin" not in verdicts or verdicts["margin"].dropna().empty:
        return []
    return [float(m) for m in verdicts["margin"].dropna().value_counts().index]


class Question(Enum):
    """The two questions an interval is read against a margin for; each has its band."""

    # Two things measured in one run (A against B: servers, languages, a variant): the band
    # [1/(1+margin), 1+margin] is symmetric on the log scale, so A against B and B against A
    # come out mirrored (faster one way is slower the other, by the same margin).
    IN_ONE_RUN = "two things measured in one run"
    # A change between two runs (after against before, never swapped): the band is a share of
    # the baseline, [1-margin, 1+margin], so "5% slower" is what ``--fail-above 5%`` promises a
    # CI user: 0.95 of the baseline rather than 1/1.05.
    BETWEEN_RUNS = "a change between two runs"


class Scale(Enum):
    RATIO = "ratio"  # a / b, read against a band around 1
    DIFFERENCE = "difference"  # a - b, read against ±margin around 0 (either question)


class Side(Enum):
    """Where an interval lies against the band: each lens has its words for above and below."""

    ABOVE = "above"
    BELOW = "below"
    WITHIN = "within"
    ACROSS = "across"  # neither wholly outside nor wholly inside: undetermined


def band(margin: float, question: Question, scale: Scale = Scale.RATIO) -> tuple[float, float]:
    """The band an interval must lie wholly within to be equivalent, outside to be decided."""
    if scale is Scale.DIFFERENCE:
        return -margin, margin
    if question is Question.IN_ONE_RUN:
        return 1 / (1 + margin), 1 + margin
    return 1 - margin, 1 + margin


def side(low: float, high: float, margin: float, question: Question, scale: Scale = Scale.RATIO) -> Side:
    """The one decision rule: an interval [low, high] against the ±margin band of ``question``."""
    lower, upper = band(margin, question, scale)
    if low > upper:
        return Side.ABOVE
    if high < lower:
        return Side.BELOW
    if lower <= low and high <= upper:
        return Side.WITHIN
    return Side.ACROSS


def outcome(side_found: Side, above: Outcome, below: Outcome) -> Outcome:
    """A side in a lens's words (``above``, ``below``: faster/slower, more/less work, ...)."""
    return {
        Side.ABOVE: above,
        Side.BELOW: below,
        Side.WITHIN: Outcome.EQUIVALENT,
        Side.ACROSS: Outcome.UNDETERMINED,
    }[side_found]
