"""The margin a comparison is read against: the size of a difference a user calls
negligible. *Equivalent* means the whole interval lies within ±margin of 1;
*faster* and *slower* mean by more than it.

``comparisons.margin`` is a number (every kind) or a mapping of comparison
kind to number with a ``default``; a profile's own ``margin`` (the same
shapes) replaces it for that profile's comparisons. The margin is a floor
under every detectable ratio, so it is kept small (2%): for "Python or Perl
on the same server" a 5% floor hid every difference the question is about.
"""

from __future__ import annotations

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
