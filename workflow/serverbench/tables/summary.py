"""summary.csv: a row per cell, from its repeats (columns: ``tables.columns.SUMMARY_COLUMNS``).

The summary follows the seed study: the best and the worst repeat are dropped
and the rest averaged (trimmed mean) from four successful repeats on, so that
at least two remain; the coefficient of variation is that of the same kept
repeats, so the spread describes the estimate it stands beside. Median, min
and max (of all repeats, for the charts' bands) are given too.
"""

from __future__ import annotations

import statistics

import pandas as pd
from scipy import stats

from serverbench.record import flags as flagging
from serverbench.record.model import cell_status
from serverbench.record.vocabulary import Status
from serverbench.tables import estimates
from serverbench.tables.columns import AVERAGED_COLUMNS, CELL_KEYS, CONTEXT_COLUMNS, SUMMARY_COLUMNS

TRIM_FROM = 4  # repeats from which the best and the worst are dropped (two at least remain)


def kept_values(values) -> list[float]:
    """The values the estimate uses: all of them, less the best and the worst from TRIM_FROM on."""
    values = sorted(v for v in values if v is not None and not pd.isna(v))
    return values[1:-1] if len(values) >= TRIM_FROM else values


def trimmed_mean(values) -> float | None:
    """Mean of the kept values (the seed study's method: best and worst dropped)."""
    kept = kept_values(values)
    return statistics.fmean(kept) if kept else None


def spread(values) -> float | None:
    """Coefficient of variation of every ok repeat (trimming the best and worst would
    hide the very spread it reports); ``unstable`` reads it, for information only."""
    kept = [v for v in values if v is not None and not pd.isna(v)]
    if len(kept) < 2 or statistics.fmean(kept) == 0:
        return None
    return float(stats.variation(kept, ddof=1))


def _cell_row(key, group: pd.DataFrame, thresholds: dict, confidence: float, seed: int) -> dict:
    """One row of summary.csv (columns: model.SUMMARY_COLUMNS) from a cell's repeats."""
    ok = group[group["status"] == Status.OK]
    rps = ok["rps"].tolist()
    row = dict(zip(CELL_KEYS, key, strict=False))
    row["repeats"] = len(group)
    row["repeats_ok"] = len(ok)
    row["status"] = cell_status(group["status"])
    reasons = sorted({r for r in group["reason"].dropna() if r})
    row["reason"] = " | ".join(reasons) if reasons else None
    row["rps_trimmed_mean"] = trimmed_mean(rps)
    row["rps_median"] = statistics.median(rps) if rps else None
    row["rps_min"] = min(rps) if rps else None
    row["rps_max"] = max(rps) if rps else None
    row["rps_cv"] = spread(rps)
    row["rps_ci_low"], row["rps_ci_high"] = estimates.median_ci(rps, confidence, seed)
    row["precision_reached"] = estimates.relative_half_width(rps, confidence, seed)
    p99 = ok["latency_p99_ms"].dropna().tolist()
    row["latency_p99_median"] = statistics.median(p99) if p99 else None
    row["latency_p99_ci_low"], row["latency_p99_ci_high"] = estimates.median_ci(p99, confidence, seed)
    for column in AVERAGED_COLUMNS:
        values = [v for v in ok[column].tolist() if v is not None and not pd.isna(v)]
        row[column] = trimmed_mean(values)
        # The spread of the repeats, for the charts' error bands.
        row[f"{column}_min"] = min(values) if values else None
        row[f"{column}_max"] = max(values) if values else None
    row["flags"] = flagging.summary_flags(ok["flags"], row["rps_cv"], len(ok), thresholds)
    for column in CONTEXT_COLUMNS:
        values = group[column].dropna()
        row[column] = values.iloc[0] if len(values) else None
    return row


def summarise(
    runs: pd.DataFrame,
    thresholds: dict,
    confidence: float = 0.95,
    seed: int = 0,
    closed_loop_tools: set[str] | None = None,
) -> pd.DataFrame:
    """A row per cell: estimates over its repeats, with confidence intervals at ``confidence``."""
    groups = runs.groupby(CELL_KEYS, sort=True, dropna=False)
    rows = [_cell_row(key, group, thresholds, confidence, seed) for key, group in groups]
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    if closed_loop_tools:
        _flag_tools_disagreeing(summary, closed_loop_tools, thresholds["tools_disagree_share"])
    return summary


def _flag_tools_disagreeing(summary: pd.DataFrame, tools: set[str], share: float) -> None:
    """Where two closed-loop tools measured one server under the same conditions, their
    median req/s must agree within ``share``; both rows are flagged where they do not."""
    measured = summary[summary["tool"].isin(tools) & summary["rps_median"].notna()]
    same = [c for c in CELL_KEYS if c != "tool"]
    for _, group in measured.groupby(same, dropna=False):
        if flagging.tools_disagree(group["rps_median"], share):
            for index in group.index:
                summary.at[index, "flags"] = flagging.with_flag(summary.at[index, "flags"], "tools_disagree")
