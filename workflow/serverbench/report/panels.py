"""What names a chart's row of panels (profile · tool, and the workload where it is not hello
world), and what tells a run's comparisons apart where it has several profiles or workloads."""

from __future__ import annotations

import pandas as pd

from serverbench.plan.shapes import DEFAULT_WORKLOAD


def panel_of(data: pd.DataFrame) -> pd.Series:
    workload = data["workload"].map(lambda w: "" if w == DEFAULT_WORKLOAD else f" · {w}")
    return data["profile"].astype(str) + " · " + data["tool"].astype(str) + workload


def where_of(verdicts: pd.DataFrame) -> pd.Series:
    """Each comparison's profile and workload, as far as the run has more than one of either
    ("apps-flask · db, "; empty for a run of one profile and one workload): the apps profile's
    comparisons of Flask's db and Django's db otherwise read (and plotted) as one."""
    parts = [column for column in ("profile", "workload") if column in verdicts and verdicts[column].nunique() > 1]
    if not parts:
        return pd.Series("", index=verdicts.index)
    return verdicts[parts].astype(str).agg(" · ".join, axis=1) + ", "
