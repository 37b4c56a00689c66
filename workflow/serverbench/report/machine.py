"""The machine, for the page: how steady it was (``host.steadiness``'s check in environment.json),
and which hosts the cells ran on, round by round (runs.csv), each in one sentence."""

from __future__ import annotations

import pandas as pd


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


def hosts_sentence(runs: pd.DataFrame | None) -> str | None:
    """Which machines the cells ran on and in which rounds (a cluster may spread rounds over
    nodes; a comparison needs each round's cells on one)."""
    if runs is None or "host_name" not in runs or runs["host_name"].isna().all():
        return None
    named = runs[runs["host_name"].notna()]
    parts = []
    for (name, model, kernel), cells in named.groupby(["host_name", "host_cpu_model", "host_kernel"], dropna=False):
        rounds = ", ".join(str(r) for r in sorted(cells["repeat"].unique()))
        jobs = cells["scheduler_job"].dropna().nunique() if "scheduler_job" in cells else 0
        placed = f"; {jobs} scheduler job{'s' if jobs > 1 else ''}" if jobs else ""
        parts.append(f"{name} ({model}, kernel {kernel}; {len(cells)} cells, rounds {rounds}{placed})")
    count = f"{len(parts)} host" + ("s" if len(parts) > 1 else "")
    return f"The cells ran on {count}: " + "; ".join(parts) + "."
