"""Latency against offered load (open loop): p99 and p50 of each server's rate
cells against the rate offered and against the fraction of its own capacity,
its knee marked."""

from __future__ import annotations

import altair as alt
import pandas as pd

from serverbench.record.vocabulary import Status
from serverbench.report.panels import panel_of
from serverbench.tables.columns import LATENCY_COLUMNS
from serverbench.tables.knees import knees


def _load_points(latency_rows: pd.DataFrame, bounds: dict) -> pd.DataFrame:
    """Per server and fraction: median p50 and p99 of the ok rate cells, and whether it is the knee."""
    ok = latency_rows[(latency_rows["status"] == Status.OK) & latency_rows["latency_p99_ms"].notna()]
    keys = ["profile", "workload", "tool", "server", "language", "fraction"]
    points = ok.groupby(keys, as_index=False).agg(
        offered_rps=("offered_rps", "median"), p50=("latency_p50_ms", "median"), p99=("latency_p99_ms", "median")
    )
    found = knees(latency_rows, bounds).set_index(["profile", "workload", "server"])["knee_fraction"]
    knee_of = found.reindex(pd.MultiIndex.from_frame(points[["profile", "workload", "server"]])).to_numpy()
    points["knee"] = points["fraction"] == knee_of
    long = points.melt(
        id_vars=[*keys, "offered_rps", "knee"], value_vars=["p50", "p99"], var_name="percentile", value_name="ms"
    )
    long["panel"] = panel_of(long)
    return long[long["ms"] > 0]


def _fraction_axis(data: pd.DataFrame) -> alt.Axis:
    """Ticks exactly at the fractions offered."""
    return alt.Axis(values=sorted({float(f) for f in data["fraction"]}), format=".2~f")


def load_chart(latency_rows: pd.DataFrame | None, bounds: dict | None = None) -> alt.HConcatChart:
    """p99 (thick) and p50 (thin) against offered req/s and against the fraction of each server's own
    capacity; a line per server, dashed by language, log latency; the knee a filled diamond."""
    rows = latency_rows if latency_rows is not None else pd.DataFrame(columns=LATENCY_COLUMNS)
    data = (
        _load_points(rows, bounds or {})
        if len(rows)
        else pd.DataFrame(
            columns=["panel", "server", "language", "fraction", "offered_rps", "knee", "percentile", "ms"]
        )
    )
    selection = alt.selection_point(fields=["server"], bind="legend")
    tooltip = [
        "server:N",
        "language:N",
        "percentile:N",
        alt.Tooltip("fraction:Q", format=".2f"),
        alt.Tooltip("offered_rps:Q", format=",.0f"),
        alt.Tooltip("ms:Q", format=".3g"),
        "knee:N",
    ]
    panels = []
    for x, title in (("offered_rps:Q", "offered requests/s"), ("fraction:Q", "fraction of the server's own capacity")):
        base = alt.Chart().encode(
            x=alt.X(x, title=title, axis=_fraction_axis(data) if x.startswith("fraction") else alt.Axis(format=",d")),
            y=alt.Y("ms:Q", title="latency (ms)", scale=alt.Scale(type="log")),
            color=alt.Color("server:N", title="server"),
            opacity=alt.condition(selection, alt.value(1.0), alt.value(0.12)),
            tooltip=tooltip,
        )
        lines = base.mark_line(point=True).encode(
            strokeDash=alt.StrokeDash("language:N", title="language"),
            strokeWidth=alt.StrokeWidth(
                "percentile:N", scale=alt.Scale(domain=["p50", "p99"], range=[1, 2.5]), title="percentile"
            ),
            detail="percentile:N",
        )
        knee = base.transform_filter("datum.knee && datum.percentile == 'p99'")
        marks = [
            lines,
            knee.mark_point(shape="diamond", size=160, filled=True),
            knee.mark_text(align="left", dx=8, dy=-8, fontSize=11).encode(text=alt.value("knee")),
        ]
        layered = alt.layer(*marks, data=data).properties(width=340, height=240)
        # The legend's selection is declared once (in the first panel) and highlights both.
        layered = layered if panels else layered.add_params(selection)
        panels.append(layered.facet(row=alt.Row("panel:N", title=None)))
    title = "Latency against offered load (open loop, coordinated omission corrected)"
    return alt.hconcat(*panels).properties(title=title + ("" if len(data) else ": no rate cells in this run"))
