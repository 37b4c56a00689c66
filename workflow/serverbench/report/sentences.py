"""Each verdict in plain words, as verdicts.csv and the Answers give it: where,
what, how sure, and why not when it cannot say (``decide`` decides; only this
stage makes its words). Languages are called by their ``title`` in config."""

from __future__ import annotations

import pandas as pd

from serverbench.decide.judgement import NOT_COMPARABLE, TimedComparison, Users
from serverbench.decide.pairs import FAIRNESS, LATENCY_KINDS
from serverbench.plan.config import requested_profile
from serverbench.plan.languages import title
from serverbench.record.vocabulary import Kind, Outcome


def _who(config: dict, server: str, language: str) -> str:
    return f"{server} ({title(config, language)})"


def _claim(found: TimedComparison, interval: str, config: dict) -> str:
    """What the ratio says, in the words of the comparison's kind."""
    a, b, kind, times = found.a, found.b, found.kind, f"{found.estimate:.2f}×"
    if kind == Kind.CEILING:
        return f"{a} reaches {found.estimate:.0%} of {b}'s requests/s ({interval})"
    if kind == Kind.BEST_OF_LANGUAGE:
        first, second = title(config, found.language_a), title(config, found.language_b)
        return (
            f"the best {first} server, {a}, serves {times} the requests/s of the best {second} server, {b} ({interval})"
        )
    if kind == Kind.BEST_DEPLOYMENT:
        first, second = title(config, found.language_a), title(config, found.language_b)
        return (
            f"the best {first} deployment, {a}, serves {times} the requests/s of the best {second} deployment,"
            f" {b} ({interval})"
        )
    if kind == Kind.SAME_SERVER:
        first, second = title(config, found.language_a), title(config, found.language_b)
        return f"{a} serves {first} at {times} the requests/s the same server ({b}) serves {second} ({interval})"
    if kind == Kind.SERVER_SPREAD:
        language = title(config, found.language_a)
        return (
            f"the fastest {language} server, {a}, serves {times} the requests/s of the slowest, {b} ({interval}): "
            "what the choice of server is worth here"
        )
    if kind == Kind.AA:
        same = f"the same server as {b} under a second name (A/A control)"
        return f"{a}, {same}, serves {times} its requests/s ({interval})"
    if kind == Kind.VARIANT:
        return f"{a}, a variant of {b} measured in the same rounds, serves {times} its requests/s ({interval})"
    who_a, who_b = _who(config, a, found.language_a), _who(config, b, found.language_b)
    return f"{who_a} serves {times} the requests/s of {who_b} ({interval})"


def confidence_label(level: float) -> str:
    """The confidence of an interval drawn at ``level`` (0.0025 → "99.8%")."""
    return f"{(1 - level) * 100:.3g}%"


def outcome_words(found: TimedComparison) -> str:
    """A throughput outcome in words, with the margin and what the run could have told."""
    margin, verdict = found.margin, found.outcome
    if verdict in (Outcome.FASTER, Outcome.SLOWER):
        return f"{verdict} by more than {margin * 100:.3g}%"
    if verdict == Outcome.EQUIVALENT:
        return f"equivalent (within ±{margin * 100:.3g}%)"
    if verdict == Outcome.UNDETERMINED:
        detectable, needed = found.detectable_ratio, found.rounds_needed
        rounds = (
            f"; at this host's noise about {needed:.0f} rounds would decide it, against {min(found.n_a, found.n_b)}"
            if needed is not None and needed == needed
            else ""
        )
        return (
            f"undetermined (this run could have told a ratio beyond {detectable:.2f}× or below {1 / detectable:.2f}×"
            f"{rounds})"
        )
    return verdict


def _where(found: TimedComparison) -> dict:
    return dict(found.condition)


def _subject(condition: dict, config: dict) -> str:
    """Which app and workload a comparison is of, where the run has more than one to tell
    apart (a profile of several ``apps``, or of several workloads); empty otherwise."""
    name, workload = condition["profile"], condition.get("workload")
    if name not in config["profiles"]:  # a profile of several apps, compared across them (best deployment)
        return f" on the {workload} workload"
    profile = requested_profile(config, name)
    several = len(profile.get("workloads") or []) > 1
    if profile.get("expanded_from"):
        return f" on {profile['app']}'s {workload} workload" if several else f" on the {profile['app']} app"
    if several:
        return f" on the {workload} workload"
    return ""


def sentence(found: TimedComparison, config: dict) -> str:
    """A throughput verdict in plain words."""
    condition = _where(found)
    where = f"Under {condition['tool']} at {condition['concurrency']} connections{_subject(condition, config)}"
    why = f" ({found.why})" if found.why else ""
    if found.outcome == NOT_COMPARABLE:
        if not found.a:
            return f"{where}, best of each language: not comparable, {found.why}"
        return f"{where}, {found.a} against {found.b}: not comparable, {found.why}"
    confidence = confidence_label(found.level)
    interval = f"{confidence} CI {found.low:.2f}–{found.high:.2f}"
    if found.kind == Kind.CEILING:
        interval = f"{confidence} CI {found.low:.0%}–{found.high:.0%}"
    return f"{where}, {_claim(found, interval, config)}: {outcome_words(found)}{why}"


def latency_sentence(found: TimedComparison, confidence: float) -> str:
    condition = _where(found)
    connections = int(condition["concurrency"])
    where = f"Latency under load ({condition['tool']}, {connections} connection{'s' if connections != 1 else ''})"
    a, b, why = found.a, found.b, f" ({found.why})" if found.why else ""
    if found.kind == Kind.KNEE:
        if found.outcome != Outcome.MEASURED:
            return f"{where}: {a} has no knee figure{why}"
        low, high = found.low, found.high
        known = low is not None and not pd.isna(low)
        upper = f"{high:,.0f}" if high is not None and not pd.isna(high) else "beyond the range measured"
        interval = f" (knee between {low:,.0f} and {upper} req/s at {confidence:.0%})" if known else ""
        return f"{where}: {a} answers within its p99 bound up to {found.a_value:,.0f} req/s{interval}{why}"
    if found.outcome == NOT_COMPARABLE:
        return f"{where}, {a} against {b}, {found.kind}: not comparable{why}"
    times = f"{found.estimate:.2f}×"
    if found.kind == Kind.KNEE_RATIO:
        return (
            f"{where}: {a}'s knee is {times} {b}'s ({found.a_value:,.0f} against {found.b_value:,.0f} req/s;"
            f" one figure each, not tested){why}"
        )
    if found.kind == Kind.P99_AT_EQUAL_LOAD:
        return (
            f"{where}: at {found.offered_rps:,.0f} req/s offered to both, {a}'s p99 is {found.a_value:.3g} ms"
            f" against {b}'s {found.b_value:.3g} ms ({times}, interpolated, not tested){why}"
        )
    interval = (
        f"{confidence:.0%} CI {found.low:.2f}–{found.high:.2f}"
        if found.low is not None and not pd.isna(found.low)
        else f"{found.n_a} against {found.n_b} runs: not tested"
    )
    return (
        f"{where}: at {found.fraction:g} of its own capacity, {a}'s p99 is {times} {b}'s"
        f" ({found.a_value:.3g} against {found.b_value:.3g} ms, {interval}): {found.outcome}{why}"
    )


def fairness_sentence(found: TimedComparison) -> str:
    """A fairness comparison's sentence, with what each side's users got."""
    where = f"Under {dict(found.condition)['tool']} at {dict(found.condition)['concurrency']} connections"
    if found.low is None:
        return f"{where}, {found.a} against {found.b}: fairness {found.outcome}"
    level = f"{(1 - found.level) * 100:.3g}%"
    interval = f"{level} CI {found.low:.2f}–{found.high:.2f}"
    detail = f"Jain's index {found.a_value:.2f} against {found.b_value:.2f}"
    if found.outcome == Outcome.EQUIVALENT:
        outcome = f"equivalent (within ±{found.margin * 100:.3g}%)"
    elif found.outcome == Outcome.UNDETERMINED and found.detectable_ratio:
        outcome = f"undetermined (this run could have told beyond {found.detectable_ratio:.2f}×)"
    else:
        outcome = f"{found.outcome} by more than {found.margin * 100:.3g}%"
    return (
        f"{where}, {found.a} serves its connections {found.estimate:.2f}× as evenly as {found.b}"
        f" ({detail}; {interval}): {outcome}{_what_users_got(found.users or (Users(), Users()))}"
    )


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2g}"


def _what_users_got(users: tuple[Users, Users]) -> str:
    """The connections answered at all, and the p90 over all of them of the time between answers."""
    a, b = users
    parts = []
    if pd.notna(a.answered_share) and pd.notna(b.answered_share):
        parts.append(f"{a.answered_share:.0%} against {b.answered_share:.0%} of connections answered")
    if pd.notna(a.connection_wait_p90_ms) and pd.notna(b.connection_wait_p90_ms):
        parts.append(
            f"the slowest-served tenth waited {_ms(a.connection_wait_p90_ms)} against"
            f" {_ms(b.connection_wait_p90_ms)} ms between answers (a starved connection counts its whole window)"
        )
    return f"; {'; '.join(parts)}" if parts else ""


def in_words(found: TimedComparison, config: dict) -> str:
    """The comparison's sentence, in the words of its metric and kind."""
    if found.kind in LATENCY_KINDS:
        return latency_sentence(found, config["comparisons"]["confidence"])
    if found.kind == FAIRNESS:
        return fairness_sentence(found)
    return sentence(found, config)
