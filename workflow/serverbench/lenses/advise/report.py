"""The advice in words: per server the recommended setting or why none is, the servers
ranked, what the rule of thumb gave. Its section and its chart are ``page`` (the workflow
imports this module when it is parsed, and parsing loads no charting library)."""

from __future__ import annotations

import json

import pandas as pd

from serverbench.lenses.advise.limit import limit_clause, setting_words
from serverbench.lenses.advise.record import Bound, Reproduced, Verdict
from serverbench.record.vocabulary import Outcome


def _rule(row: dict) -> str:
    if pd.isna(row.get("rule_workers")):
        return ""
    rule = {"model": row["rule_model"], "server": row["server"], "workers": row["rule_workers"]}
    said = f"the rule of thumb ({setting_words({**rule, 'threads': row['rule_threads']})})"
    if not row.get("rule_capacity_rps"):
        return f"; {said} met the objective at no rate offered"
    gain = f", {row['gain']:.2f}× of it" if not pd.isna(row.get("gain")) else ""
    return f"; {said} gave {row['rule_capacity_rps']:.0f} req/s ({row['rule_memory_mb']} MB){gain}"


def server_sentence(row: dict) -> str:
    """One line per server: what to run, or why it is not recommended."""
    objective = f"p99 ≤ {row['objective_p99_ms']:g} ms"
    if row["verdict"] == Verdict.NOT_MEASURED:
        return f"{row['server']}: not measured ({row['reason']})."
    if row["verdict"] == Verdict.NOT_RECOMMENDED:
        setting = f" (best setting {setting_words(row)})" if not pd.isna(row.get("model")) else ""
        return f"{row['server']}: not recommended: {row['reason']}{setting}{_rule(row)}."
    interval = (
        f"{row['capacity_rps']:.0f}–{row['capacity_missed_rps']:.0f}"
        if not pd.isna(row["capacity_missed_rps"])
        else f"at least {row['capacity_rps']:.0f}"
    )
    tied = json.loads(row["equivalent_settings"]) if isinstance(row["equivalent_settings"], str) else []
    tie = f"; not told apart from {', '.join(tied)}, which use more memory" if tied else ""
    bound = BOUND_WORDS.get(row["bound_by"], "")
    return (
        f"#{int(row['rank'])} {row['server']}: {setting_words(row)}: {row['capacity_rps']:.0f} req/s with {objective} "
        f"(capacity {interval} req/s), {row['memory_mb']} MB PSS under that load{bound}{tie}{_rule(row)}"
        f"{_reproduced(row)}{limit_clause(row)}."
    )


BOUND_WORDS = {
    Bound.BUDGET: "; the memory budget bound it",
    Bound.POINTS: "; the search stopped at its point budget while capacity still rose (more may do more: "
    "raise advise.max_points)",
}


def _reproduced(row: dict) -> str:
    """Whether the recommendation reproduced from its deployed file, and by how much it moved."""
    said = row.get("reproduced")
    if not isinstance(said, str) or said == Reproduced.NOT_MEASURED:
        return "; not measured again from its deployed file"
    again = f"; from its deployed file it gave {row['reproduced_rps']:.0f} req/s"
    if said == Reproduced.YES:
        return f"{again}: reproduced"
    return f"{again}, {row['reproduced_ratio']:.2f}× the search's: did not reproduce ({said})"


def ranking_sentence(rows: list[dict]) -> str | None:
    ranked = [r for r in rows if r["verdict"] == Verdict.RECOMMENDED]
    if not ranked:
        return None
    words = [ranked[0]["server"]]
    for row, after in zip(ranked, ranked[1:], strict=False):
        words.append(("≈ " if row["vs_next"] == Outcome.EQUIVALENT else "> ") + after["server"])
    return "Ranked by capacity at the objective (≈: their intervals overlap): " + " ".join(words) + "."
