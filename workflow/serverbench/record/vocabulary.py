"""The project's words, each an enumeration, defined here once.

Every stage reads and writes these: a job's status, a comparison's kind, the metric
it was judged on and its outcome. They are ``StrEnum``s, so a member *is* its word:
it is written to CSV and JSON as that word, and a table read back compares equal to
the member (``row["outcome"] == Outcome.FASTER``), so no record or table changes
shape by using them.

These are the core's words, those the stages below the lenses write. A lens's own kinds,
metrics and outcomes are its own enumerations in its folder, declared through the interface
(``lens.Words``), and the registry refuses one the core or another lens already has.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """How a job that started a server ended (a cell, a work record, a life, a probe)."""

    OK = "ok"
    SKIPPED = "skipped"  # could not be measured here, with the reason (a program missing, a workload not served)
    FAILED = "failed"  # measured and failed (the server's doing), or a harness error, with the reason
    # A figure of a table (a check, a capacity) that no measurement gave, with the reason: the job
    # ran, yet nothing in it could give this figure (the app lacks the path, no life restarted).
    NOT_MEASURED = "not measured"


class Kind(StrEnum):
    """What a comparison compares (``decide.pairs`` declares the first six; a lens may add its own)."""

    SAME_SERVER = "same server"  # one product serving two languages
    FAMILY = "family"  # one design in two languages
    VARIANT = "variant"  # a catalogue variant against its original
    AA = "A/A"  # the same server twice: never faster or slower
    NAMED = "named"  # a pair listed in comparisons.pairs
    CEILING = "ceiling"  # every server against the ceiling
    BEST_OF_LANGUAGE = "best of language"  # described, not tested: chosen after seeing the data
    SERVER_SPREAD = "server spread"
    BEST_DEPLOYMENT = "best deployment"
    FAIRNESS = "fairness"
    SEED = "seed"
    KNEE = "knee"
    KNEE_RATIO = "knee ratio"
    P99_AT_FRACTION = "p99 at fraction"
    P99_AT_EQUAL_LOAD = "p99 at equal load"
    RELEASE = "release"  # a server's release against its baseline release (plan.releases)
    RELEASE_STEP = "release step"  # a server's release against the release before it


# The one order in which the page and the console list comparisons of several kinds: the
# question the run asks first (one server, two languages), then its controls.
KIND_ORDER: dict[str, int] = {
    kind: rank
    for rank, kind in enumerate(
        (
            Kind.SAME_SERVER,
            Kind.FAMILY,
            Kind.VARIANT,
            Kind.AA,
            Kind.NAMED,
            Kind.RELEASE,
            Kind.RELEASE_STEP,
            Kind.CEILING,
            Kind.SEED,
        )
    )
}


class Metric(StrEnum):
    """What a comparison was judged on (a lens may add its own)."""

    SPEED = "speed"
    FAIRNESS = "fairness"
    WORK = "work"
    LATENCY = "latency"


class Outcome(StrEnum):
    """A comparison's outcome. Each lens says *above* and *below* the band in its own words
    (``decide.margins.Side``): faster/slower, more/less work, higher/lower."""

    FASTER = "faster"
    SLOWER = "slower"
    MORE_WORK = "more work"
    LESS_WORK = "less work"
    HIGHER = "higher"
    LOWER = "lower"
    FAIRER = "fairer"
    LESS_FAIR = "less fair"
    LOWER_P99 = "lower p99"
    HIGHER_P99 = "higher p99"
    EQUIVALENT = "equivalent"
    UNDETERMINED = "undetermined"
    NOT_COMPARABLE = "not comparable"
    NOT_TESTED = "not tested"  # described (chosen after seeing the data), not tested
    MEASURED = "measured"  # a figure of one server described, compared with none (its knee)
    NOT_MEASURED = "not measured"  # ... that could not be measured, with the reason
    HOLDS = "holds"  # a seed's claim, checked in its own figures or in a run (decide.seeds)
    CONTRADICTED = "contradicted"
    NOT_STATED = "not stated"  # ... that its seed gives no figure for
    PENDING = ""  # not yet decided (Holm's procedure and the margin give a timed comparison its outcome)


# The outcomes that decide a comparison one way or the other, in any lens's words.
DECIDED = frozenset(
    {
        Outcome.FASTER,
        Outcome.SLOWER,
        Outcome.MORE_WORK,
        Outcome.LESS_WORK,
        Outcome.HIGHER,
        Outcome.LOWER,
        Outcome.FAIRER,
        Outcome.LESS_FAIR,
        Outcome.LOWER_P99,
        Outcome.HIGHER_P99,
    }
)


class Framing(StrEnum):
    """How the end of a server's answer is known (RFC 9112 6.3), as the verifier found it."""

    CONTENT_LENGTH = "content-length"
    CHUNKED = "chunked"
    # Neither: the server closed the connection after the body, so the close ends the answer.
    # Valid, but no connection is reused: every request pays a new one.
    CLOSE_DELIMITED = "close-delimited"
    # Neither, yet the server kept the connection open after the body (it answered another
    # request on it, or did not close it within the timeout): a client sees the answer end only
    # when the server's idle timeout closes the connection (uWSGI's --http11-socket does this).
    UNDELIMITED = "undelimited"
