"""What names a chart's row of panels: profile · tool, and the workload where it is not hello world."""

from __future__ import annotations

import pandas as pd

from serverbench.plan.shapes import DEFAULT_WORKLOAD


def panel_of(data: pd.DataFrame) -> pd.Series:
    workload = data["workload"].map(lambda w: "" if w == DEFAULT_WORKLOAD else f" · {w}")
    return data["profile"].astype(str) + " · " + data["tool"].astype(str) + workload
