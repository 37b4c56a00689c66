"""The forest plot: every throughput comparison of the run, its ratio with its
interval on a log axis, the ±margin band around 1, coloured by outcome — what
the run decided, what it found equivalent, and what it could not tell, at a
glance; where the run counted work, the work lens's comparisons in a panel of
their own below (another quantity, another axis and margin)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd

from serverbench.decide.pairs import FAIRNESS, LATENCY_KINDS
from serverbench.lens import ForestPanel
from serverbench.record.vocabulary import Outcome
from serverbench.report.panels import where_of

OUTCOMES = [Outcome.FASTER, Outcome.SLOWER, Outcome.EQUIVALENT, Outcome.UNDETERMINED, Outcome.NOT_TESTED]
COLOURS = ["#1b7837", "#b2182b", "#2166ac", "#888888", "#c7a04a"]


def forest_rows(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The throughput comparisons that have a ratio and an interval, labelled for the axis."""
    # req/s only: fairness ratios (Jain's index) have their own scale and words.
    throughput = ~verdicts["kind"].isin([*LATENCY_KINDS, FAIRNESS])
    rows = verdicts[throughput & verdicts["ci_low"].notna() & verdicts["ratio"].notna()]
    # The Answers' fact columns (JSON text, a boolean beside missing values) are not the chart's:
    # a mixed column reached the page's Vega-Lite spec as a bare NaN, which is no JSON.
    rows = rows.drop(columns=["not_measured", "only_not_measured", "left_out"], errors="ignore")
    rows = rows.assign(
        comparison=where_of(rows)
        + rows["a"]
        + " / "
        + rows["b"]
        + " · "
        + rows["kind"]
        + " · "
        + rows["tool"]
        + " c="
        + rows["concurrency"].astype(str)
        + rows["fraction"].map(lambda f: "" if pd.isna(f) else f" at {f:g} of capacity"),
        confidence=(1 - rows["level"]).map(lambda c: f"{c:.3g}"),
    )
    return rows


def panel_rows(verdicts: pd.DataFrame | None) -> pd.DataFrame:
    """A lens's comparisons with an interval (``lens.ForestPanel``), labelled for the axis."""
    if verdicts is None or verdicts.empty:
        return pd.DataFrame()
    rows = verdicts[verdicts["ci_low"].notna() & verdicts["ratio"].notna()]
    several = rows[["profile", "workload"]].drop_duplicates().shape[0] > 1
    where = (rows["profile"] + " · " + rows["workload"] + " · ") if several else ""
    return rows.assign(
        comparison=where + rows["a"] + " / " + rows["b"] + " · " + rows["kind"],
        sentence=rows["why"].fillna("") if "why" in rows else "",
        confidence="",
        detectable_ratio=None,
    )[["comparison", "outcome", "ratio", "ci_low", "ci_high", "confidence", "detectable_ratio", "sentence"]]


def _panel(rows: pd.DataFrame, margin: float, axis_title: str, colours: tuple[list, list], title: list[str]):
    """One forest: each row's ratio and interval on a log axis, the ±margin band around 1."""
    # An unbounded rank interval (too few repeats for its level) is drawn to the edge of the axis.
    finite = pd.concat([rows["ci_low"], rows["ci_high"]]).replace([float("inf"), 0.0], pd.NA).dropna()
    low, high = min(finite.min(), 1 / (1 + margin)) * 0.9, max(finite.max(), 1 + margin) * 1.1
    rows = rows.assign(ci_low=rows["ci_low"].clip(lower=low), ci_high=rows["ci_high"].clip(upper=high))
    log_axis = alt.Scale(type="log", domain=[low, high])
    x = alt.X("ratio:Q", scale=log_axis, title=axis_title)
    # Each row's label sits above its interval, not in a column on the left: on a phone's
    # width a label column leaves no room for the plot.
    y = alt.Y("comparison:N", sort=None, title=None, axis=None, scale=alt.Scale(padding=0.7))
    legend = alt.Legend(orient="top", direction="horizontal", columns=3, title=None)
    colour = alt.Color("outcome:N", scale=alt.Scale(domain=colours[0], range=colours[1]), legend=legend)
    tooltip = ["comparison", "outcome", "ratio", "ci_low", "ci_high", "confidence", "detectable_ratio", "sentence"]
    band = (
        alt.Chart(pd.DataFrame({"low": [1 / (1 + margin)], "high": [1 + margin]}))
        .mark_rect(color="#dddddd", opacity=0.6)
        .encode(x="low:Q", x2="high:Q")
    )
    one = alt.Chart(pd.DataFrame({"one": [1.0]})).mark_rule(color="#444").encode(x="one:Q")
    bars = (
        alt.Chart(rows)
        .mark_rule(strokeWidth=2)
        .encode(x=alt.X("ci_low:Q", scale=log_axis), x2="ci_high:Q", y=y, color=colour, tooltip=tooltip)
    )
    points = alt.Chart(rows).mark_point(filled=True, size=50).encode(x=x, y=y, color=colour, tooltip=tooltip)
    labels = (
        alt.Chart(rows)
        .mark_text(align="left", baseline="bottom", dy=-6, fontSize=11, color="#222", limit=alt.ExprRef("width"))
        .encode(x=alt.value(0), y=y, text="comparison:N", tooltip=tooltip)
    )
    return (band + one + bars + points + labels).properties(
        width=520, height=34 * len(rows) + 10, title=alt.TitleParams(title, anchor="start")
    )


def forest_chart(verdicts: pd.DataFrame, margin: float, panels: Sequence[tuple[ForestPanel, pd.DataFrame]] = (),
                 config: Mapping | None = None):  # fmt: skip
    """Every comparison with an interval: the timed ones (requests per second) and, below them on
    axes of their own, the panels the run's lenses add (``panels``: each with its verdict table)."""
    rows = forest_rows(verdicts)
    drawn = [(panel, panel_rows(table)) for panel, table in panels]
    drawn = [(panel, found) for panel, found in drawn if not found.empty]
    if rows.empty and not drawn:
        return (
            alt.Chart(pd.DataFrame({"text": ["no comparison with an interval in this run"]}))
            .mark_text()
            .encode(text="text:N")
        )
    charts = []
    if not rows.empty:
        title = ["Every comparison: its ratio and interval", f"grey band: within ±{margin * 100:.3g}% (equivalent)"]
        charts.append(_panel(rows, margin, "requests/s, ratio A / B (log)", (OUTCOMES, COLOURS), title))
    for panel, found in drawn:
        own = panel.margin(config or {}) or margin
        title = [*panel.title, f"grey band: within ±{own * 100:.3g}% (equivalent)"]
        charts.append(_panel(found, own, panel.axis, (list(panel.outcomes), list(panel.colours)), title))
    if len(charts) == 1:
        return charts[0]
    return alt.vconcat(*charts).resolve_scale(color="independent", x="independent", y="independent")
