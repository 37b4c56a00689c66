"""verdicts.csv: every declared comparison of a run as ``decide.verdicts`` decided it, each with
its sentence (``report.sentences``): the decision and its words made in their own stages."""

from __future__ import annotations

import pandas as pd

from serverbench.decide.verdicts import VERDICT_COLUMNS, comparisons
from serverbench.report.sentences import in_words


def verdict_table(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    config: dict,
    latency: pd.DataFrame | None = None,
    windows: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """verdicts.csv: every comparison of ``decide.verdicts.comparisons`` as a row, with its sentence."""
    found = comparisons(runs, summary, config, latency, windows)
    rows = [comparison.as_row() | {"sentence": in_words(comparison, config)} for comparison in found]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
