"""Each verdict in plain words, as verdicts.csv and the Answers give it: where,
what, how sure, and why not when it cannot say. Languages are called by their
``title`` in config."""

from __future__ import annotations

import pandas as pd

from serverbench.plan.languages import title


def _who(config: dict, server: str, language: str) -> str:
    return f"{server} ({title(config, language)})"


def _claim(row: dict, interval: str, config: dict) -> str:
    """What the ratio says, in the words of the comparison's kind."""
    a, b, times = row["a"], row["b"], f"{row['ratio']:.2f}×"
    if row["kind"] == "ceiling":
        return f"{a} reaches {row['ratio']:.0%} of {b}'s requests/s ({interval})"
    if row["kind"] == "best of language":
        first, second = title(config, row["language_a"]), title(config, row["language_b"])
        return (
            f"the best {first} server, {a}, serves {times} the requests/s of the best {second} server, {b} ({interval})"
        )
    if row["kind"] == "same server":
        first, second = title(config, row["language_a"]), title(config, row["language_b"])
        return f"{a} serves {first} at {times} the requests/s the same server ({b}) serves {second} ({interval})"
    if row["kind"] == "server spread":
        language = title(config, row["language_a"])
        return (
            f"the fastest {language} server, {a}, serves {times} the requests/s of the slowest, {b} ({interval}): "
            "what the choice of server is worth here"
        )
    if row["kind"] == "A/A":
        same = f"the same server as {b} under a second name (A/A control)"
        return f"{a}, {same}, serves {times} its requests/s ({interval})"
    if row["kind"] == "variant":
        return f"{a}, a variant of {b} measured in the same rounds, serves {times} its requests/s ({interval})"
    who_a, who_b = _who(config, a, row["language_a"]), _who(config, b, row["language_b"])
    return f"{who_a} serves {times} the requests/s of {who_b} ({interval})"


def confidence_label(level: float) -> str:
    """The confidence of an interval drawn at ``level`` (0.0025 → "99.8%")."""
    return f"{(1 - level) * 100:.3g}%"


def outcome_words(row: dict) -> str:
    """A throughput outcome in words, with the margin and what the run could have told."""
    margin, verdict = row.get("margin"), row["verdict"]
    if verdict in ("faster", "slower"):
        return f"{verdict} by more than {margin * 100:.3g}%"
    if verdict == "equivalent":
        return f"equivalent (within ±{margin * 100:.3g}%)"
    if verdict == "undetermined":
        detectable = row["detectable_ratio"]
        needed = row.get("rounds_needed")
        rounds = (
            f"; at this host's noise about {needed:.0f} rounds would decide it, against {min(row['n_a'], row['n_b'])}"
            if needed is not None and needed == needed
            else ""
        )
        return (
            f"undetermined (this run could have told a ratio beyond {detectable:.2f}× or below {1 / detectable:.2f}×"
            f"{rounds})"
        )
    return verdict


def sentence(row: dict, config: dict) -> str:
    """A throughput verdict in plain words."""
    where = f"Under {row['tool']} at {row['concurrency']} connections"
    why = f" ({row['why']})" if row.get("why") else ""
    if row["verdict"] == "not comparable":
        if not row.get("a"):
            return f"{where}, best of each language: not comparable, {row['why']}"
        return f"{where}, {row['a']} against {row['b']}: not comparable, {row['why']}"
    confidence = confidence_label(row["level"])
    interval = f"{confidence} CI {row['ci_low']:.2f}–{row['ci_high']:.2f}"
    if row["kind"] == "ceiling":
        interval = f"{confidence} CI {row['ci_low']:.0%}–{row['ci_high']:.0%}"
    return f"{where}, {_claim(row, interval, config)}: {outcome_words(row)}{why}"


def latency_sentence(row: dict, confidence: float) -> str:
    connections = int(row["concurrency"])
    where = f"Latency under load ({row['tool']}, {connections} connection{'s' if connections != 1 else ''})"
    a, b, why = row["a"], row.get("b"), f" ({row['why']})" if row.get("why") else ""
    if row["kind"] == "knee":
        if row["verdict"] != "measured":
            return f"{where}: {a} has no knee figure{why}"
        low, high = row.get("ci_low"), row.get("ci_high")
        known = low is not None and not pd.isna(low)
        upper = f"{high:,.0f}" if high is not None and not pd.isna(high) else "beyond the range measured"
        interval = f" (knee between {low:,.0f} and {upper} req/s at {confidence:.0%})" if known else ""
        return f"{where}: {a} answers within its p99 bound up to {row['median_a']:,.0f} req/s{interval}{why}"
    if row["verdict"] == "not comparable":
        return f"{where}, {a} against {b}, {row['kind']}: not comparable{why}"
    times = f"{row['ratio']:.2f}×"
    if row["kind"] == "knee ratio":
        return (
            f"{where}: {a}'s knee is {times} {b}'s ({row['median_a']:,.0f} against {row['median_b']:,.0f} req/s;"
            f" one figure each, not tested){why}"
        )
    if row["kind"] == "p99 at equal load":
        return (
            f"{where}: at {row['offered_rps']:,.0f} req/s offered to both, {a}'s p99 is {row['median_a']:.3g} ms"
            f" against {b}'s {row['median_b']:.3g} ms ({times}, interpolated, not tested){why}"
        )
    interval = (
        f"{confidence:.0%} CI {row['ci_low']:.2f}–{row['ci_high']:.2f}"
        if row.get("ci_low") is not None and not pd.isna(row.get("ci_low"))
        else f"{row.get('n_a')} against {row.get('n_b')} runs: not tested"
    )
    return (
        f"{where}: at {row['fraction']:g} of its own capacity, {a}'s p99 is {times} {b}'s"
        f" ({row['median_a']:.3g} against {row['median_b']:.3g} ms, {interval}): {row['verdict']}{why}"
    )
