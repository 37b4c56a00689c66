"""How steady the machine was (``host.steadiness``'s check in environment.json), in one sentence for the page."""

from __future__ import annotations


def steadiness_sentence(result: dict | None) -> str | None:
    """The check in one sentence, for the page's reader."""
    if not result:
        return None
    parts = [_describe_cpu(cpu, figures) for cpu, figures in result["cpus"].items()]
    sentence = f"How steady this machine was, over a {result['seconds']:g} s check of every CPU: " + "; ".join(parts)
    if result["slow_share_max"] >= 0.05:
        return sentence + ". Repeats of one cell can differ by that much for this reason alone, whatever the server."
    return sentence + "."


def _describe_cpu(cpu: str, figures: dict) -> str:
    text = (
        f"CPU {cpu} ran slower than its fastest for {100 * figures['slow_share']:.0f}% of the time"
        f" (up to {figures['slowest_over_fast']:.1f}×)"
    )
    if figures["waited_share"] >= 0.05:
        text += f", and waited for another task {100 * figures['waited_share']:.0f}% of it"
    return text
