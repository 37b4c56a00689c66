"""Altair charts from the run's tables (names and titles: ``report.names``).

The seed study's five charts (requests/s, latency, memory, error rate, CPU,
each against concurrency), one language against another, each server against
the run's ceiling (``comparisons.ceiling``), workers over time, steady state,
and latency against offered load (``report.load_chart``). Charts are saved as
self-contained HTML (Vega libraries inlined, so they work offline), PNG and
SVG through vl-convert. The summary is one row per cell and only the columns
a chart uses are embedded, so chart data stays small whatever the size of the
matrix. A point is marked where its cell is not comparable
(``decide.comparability``), the one rule the verdicts use.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import altair as alt
import pandas as pd

from serverbench.decide.comparability import comparable
from serverbench.decide.margins import margin_for, run_margins
from serverbench.decide.verdicts import VERDICT_COLUMNS
from serverbench.lens import ForestPanel
from serverbench.plan import languages
from serverbench.plan.rates import knee_bounds
from serverbench.plan.shapes import DEFAULT_WORKLOAD
from serverbench.report.forest import forest_chart
from serverbench.report.load_chart import load_chart
from serverbench.report.names import CHARTS, METRIC_TITLES
from serverbench.report.panels import panel_of
from serverbench.tables.columns import STEADY_COLUMNS, WORKER_COLUMNS

# name: (y title, [(column, label)], log scale for y); titles in report.names
METRICS = {
    "rps": ("requests/s", [("rps_trimmed_mean", "req/s")], False),
    "latency": ("latency (ms)", [("latency_p50_ms", "p50"), ("latency_p99_ms", "p99")], True),
    "memory": ("MB", [("server_rss_peak_mb", "RSS peak"), ("server_pss_peak_mb", "PSS peak")], False),
    "errors": ("errors / requests", [("error_rate", "error rate")], False),
    "cpu": ("CPU % (100 = one CPU)", [("server_cpu_percent", "CPU %")], False),
}
# The statistic the verdicts compare (decide.stats: the ratio of medians), for the ceiling chart.
VERDICT_STATISTIC = "rps_median"
BAND = {"rps_trimmed_mean": ("rps_min", "rps_max")}
CONTEXT = ["server", "language", "family", "profile", "workload", "tool", "concurrency", "flags", "flagged", "panel"]
DETAILS = [
    "repeats_ok", "rps_trimmed_mean", "rps_cv", "latency_p50_ms", "latency_p99_ms", "error_rate",
    "server_rss_peak_mb", "server_pss_peak_mb", "server_cpu_percent", "client_cpu_percent",
    "keepalive", "server_version", "interpreter",
]  # fmt: skip
TOOLTIP = [
    alt.Tooltip("server:N"),
    alt.Tooltip("language:N"),
    alt.Tooltip("family:N"),
    alt.Tooltip("profile:N"),
    alt.Tooltip("tool:N"),
    alt.Tooltip("concurrency:Q"),
    alt.Tooltip("repeats_ok:Q", title="repeats"),
    alt.Tooltip("rps_trimmed_mean:Q", title="req/s (trimmed mean)", format=",.0f"),
    alt.Tooltip("rps_cv:Q", title="req/s CV", format=".1%"),
    alt.Tooltip("latency_p50_ms:Q", title="p50 ms", format=".2f"),
    alt.Tooltip("latency_p99_ms:Q", title="p99 ms", format=".2f"),
    alt.Tooltip("error_rate:Q", title="error rate", format=".2%"),
    alt.Tooltip("server_rss_peak_mb:Q", title="RSS peak MB", format=".1f"),
    alt.Tooltip("server_pss_peak_mb:Q", title="PSS peak MB", format=".1f"),
    alt.Tooltip("server_cpu_percent:Q", title="server CPU %", format=".0f"),
    alt.Tooltip("client_cpu_percent:Q", title="client CPU %", format=".0f"),
    alt.Tooltip("keepalive:N", title="keep-alive"),
    alt.Tooltip("flags:N"),
    alt.Tooltip("server_version:N", title="version"),
    alt.Tooltip("interpreter:N"),
]


def measured(summary: pd.DataFrame, not_comparable: set[str]) -> pd.DataFrame:
    """Rows with numbers, plus the fields every chart uses; ``flagged`` where the cell is not
    comparable (every flag is in the tooltip either way)."""
    data = summary[summary["status"].isin(["ok", "partial"])].copy()
    for column in ("family", "flags", "keepalive", "server_version", "interpreter", "reason"):
        if column not in data:
            data[column] = None
    data["flagged"] = ~comparable_rows(data, not_comparable)
    data["flags"] = data["flags"].fillna("").astype(str)
    data["family"] = data["family"].fillna("")
    if "workload" not in data:
        data["workload"] = DEFAULT_WORKLOAD
    data["workload"] = data["workload"].fillna(DEFAULT_WORKLOAD).astype(str)
    data["panel"] = panel_of(data)
    return data


def _columns(data: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    wanted = list(dict.fromkeys(CONTEXT + DETAILS + extra))
    return data[[c for c in wanted if c in data.columns]]


def _x(levels=None):
    """Concurrency on a log axis, ticked exactly at the levels measured."""
    axis = alt.Axis(values=sorted({int(v) for v in levels}), format="d") if levels is not None else alt.Axis(format="d")
    return alt.X("concurrency:Q", scale=alt.Scale(type="log"), axis=axis, title="concurrent connections")


def _profiles(data: pd.DataFrame) -> str:
    names = sorted(data["profile"].dropna().astype(str).unique())
    return f"profile {', '.join(names)}" if names else "no profile"


def _lines_and_points(base: alt.Chart, selection) -> alt.LayerChart:
    """Lines dashed by language; points hollow and crossed where flagged (told apart by shape, not colour)."""
    lines = base.mark_line().encode(strokeDash=alt.StrokeDash("language:N", title="language"))
    points = base.mark_point(size=60, filled=False, strokeWidth=2).encode(
        fill=alt.condition("datum.flagged", alt.value("white"), alt.Color("server:N", legend=None)),
        shape=alt.Shape(
            "flagged:N",
            title="not comparable",
            scale=alt.Scale(domain=[False, True], range=["circle", "cross"]),
            legend=alt.Legend(symbolStrokeColor="#444", symbolFillColor="white"),
        ),
    )
    return alt.layer(lines, points).add_params(selection)


def metric_chart(summary: pd.DataFrame, metric: str, not_comparable: set[str]) -> alt.FacetChart:
    """One of the seed study's five charts, faceted by profile · tool (rows) and measure."""
    title, (y_title, columns, log) = METRIC_TITLES[metric], METRICS[metric]
    data = measured(summary, not_comparable)
    frames = []
    for column, label in columns:
        low, high = BAND.get(column, (f"{column}_min", f"{column}_max"))
        part = _columns(data, [column, low, high]).copy()
        part["measure"], part["value"] = label, part[column]
        part["low"] = part[low] if low in part else part[column]
        part["high"] = part[high] if high in part else part[column]
        frames.append(part)
    long = pd.concat(frames, ignore_index=True).dropna(subset=["value"])
    if log:
        long = long[long["value"] > 0]
    selection = alt.selection_point(fields=["server"], bind="legend")
    scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    base = alt.Chart().encode(
        x=_x(data["concurrency"]),
        color=alt.Color("server:N", title="server"),
        opacity=alt.condition(selection, alt.value(1.0), alt.value(0.12)),
        tooltip=[*TOOLTIP, alt.Tooltip("measure:N"), alt.Tooltip("value:Q", format=",.3g")],
    )
    # Translucent whatever the selection, and drawn first: the lines stay visible above it.
    band = base.mark_area().encode(
        y=alt.Y("low:Q", scale=scale), y2="high:Q", opacity=alt.condition(selection, alt.value(0.15), alt.value(0.03))
    )
    lines = _lines_and_points(base.encode(y=alt.Y("value:Q", title=y_title, scale=scale)), selection)
    layered = alt.layer(band, lines, data=long).properties(width=360, height=240)
    facets = layered.facet(row=alt.Row("panel:N", title=None), column=alt.Column("measure:N", title=None))
    return facets.resolve_scale(y="independent").properties(
        title=f"{title} against concurrency, {_profiles(data)} (band: min–max of repeats; crosses: not comparable)"
    )


def comparable_rows(data: pd.DataFrame, not_comparable: set[str]) -> pd.Series:
    """Rows whose figure may decide (decide.comparability finds no reason against it)."""
    if data.empty:
        return pd.Series(dtype=bool, index=data.index)
    return data.apply(lambda row: comparable(row, not_comparable), axis=1).astype(bool)


def languages_chart(summary: pd.DataFrame, config: dict) -> alt.VConcatChart:
    """One language against another: families present in two compared languages or more, and the
    best comparable server of each language."""
    not_comparable = set(config["comparisons"]["not_comparable_flags"])
    compared = languages.compared(config)
    data = measured(summary, not_comparable)
    selection = alt.selection_point(fields=["server"], bind="legend")
    both = data.groupby("family")["language"].transform(lambda s: len(set(s) & set(compared)) >= 2)
    family = _columns(data[both & (data["family"] != "")], [])
    family_chart = (
        _lines_and_points(
            alt.Chart(family).encode(
                x=_x(data["concurrency"]),
                y=alt.Y("rps_trimmed_mean:Q", title="requests/s"),
                color=alt.Color("server:N"),
                opacity=alt.condition(selection, alt.value(1.0), alt.value(0.12)),
                tooltip=TOOLTIP,
            ),
            selection,
        )
        .properties(width=300, height=200)
        .facet(row=alt.Row("panel:N", title=None), column=alt.Column("family:N", title="family"))
        .properties(title="Same design, two languages (family in config)")
    )
    usable = data[data["language"].isin(compared) & ~data["flagged"]]
    keys = ["panel", "language", "concurrency"]
    best = usable.loc[usable.groupby(keys)["rps_trimmed_mean"].idxmax().dropna()]
    best_base = alt.Chart(_columns(best, [])).encode(
        x=_x(data["concurrency"]),
        y=alt.Y("rps_trimmed_mean:Q", title="requests/s of the best server"),
        color=alt.Color("language:N", title="language"),
        tooltip=TOOLTIP,
    )
    labels = best_base.mark_text(align="left", dx=7, dy=-7, fontSize=11).encode(text="server:N")
    best_chart = (
        alt.layer(best_base.mark_line(point=True), labels)
        .properties(width=360, height=220)
        .facet(row=alt.Row("panel:N", title=None))
        .properties(title="The best comparable server of each language at each concurrency (flagged cells left out)")
    )
    return alt.vconcat(family_chart, best_chart).resolve_scale(color="independent")


def ceiling_chart(summary: pd.DataFrame, config: dict) -> alt.FacetChart:
    """Each server's requests/s as a share of the run's ceiling (``comparisons.ceiling``) in the same
    profile, tool and concurrency: the ratio of medians, as its verdicts compare them."""
    baseline = config["comparisons"]["ceiling"]
    data = measured(summary, set(config["comparisons"]["not_comparable_flags"]))
    keys = ["profile", "workload", "tool", "concurrency"]
    ceiling = data[data["server"] == baseline].set_index(keys)[VERDICT_STATISTIC]
    data = data[data["server"] != baseline].copy()
    index = pd.MultiIndex.from_frame(data[keys])
    data["ceiling_rps"] = ceiling.reindex(index).to_numpy()
    data["share"] = data[VERDICT_STATISTIC] / data["ceiling_rps"]
    data = data.dropna(subset=["share"])
    selection = alt.selection_point(fields=["server"], bind="legend")
    base = alt.Chart(_columns(data, ["share", "ceiling_rps", VERDICT_STATISTIC])).encode(
        x=_x(data["concurrency"]),
        y=alt.Y("share:Q", title=f"share of {baseline} req/s", axis=alt.Axis(format="%")),
        color=alt.Color("server:N"),
        opacity=alt.condition(selection, alt.value(1.0), alt.value(0.12)),
        tooltip=[
            *TOOLTIP,
            alt.Tooltip(f"{VERDICT_STATISTIC}:Q", title="req/s (median)", format=",.0f"),
            alt.Tooltip("share:Q", format=".1%"),
            alt.Tooltip("ceiling_rps:Q", title=f"{baseline} req/s (median)", format=",.0f"),
        ],
    )
    title = f"Against the ceiling: {baseline} in the same profile" + ("" if len(data) else " (not measured)")
    return (
        _lines_and_points(base, selection)
        .properties(width=420, height=260)
        .facet(row=alt.Row("panel:N", title=None))
        .properties(title=title)
    )


def workers_chart(workers: pd.DataFrame) -> alt.FacetChart:
    """Worker processes against time in each cell: scaling up under load, down when idle.

    One line per server and repeat; the idle tail after the load (profiles
    with ``idle_after``) is drawn dashed.
    """
    data = workers.copy()
    if data.empty:
        data = pd.DataFrame(columns=WORKER_COLUMNS)
    data["workload"] = data.get("workload", pd.Series(dtype=object)).fillna(DEFAULT_WORKLOAD)
    data["panel"] = (
        data["profile"].astype(str) + " · " + data["tool"].astype(str) + " · c=" + data["concurrency"].astype(str)
    )
    data["series"] = data["server"].astype(str) + " r" + data["repeat"].astype(str)
    selection = alt.selection_point(fields=["server"], bind="legend")
    base = alt.Chart(data).encode(
        x=alt.X("t:Q", title="seconds since the load started"),
        y=alt.Y("processes:Q", title="server processes (workers + master)"),
        color=alt.Color("server:N", title="server"),
        detail="series:N",
        opacity=alt.condition(selection, alt.value(1.0), alt.value(0.12)),
        tooltip=[
            alt.Tooltip("server:N"),
            alt.Tooltip("language:N"),
            alt.Tooltip("repeat:Q"),
            alt.Tooltip("t:Q", title="t (s)"),
            alt.Tooltip("phase:N"),
            alt.Tooltip("processes:Q"),
            alt.Tooltip("threads:Q"),
            alt.Tooltip("rss_mb:Q", title="RSS (MB)", format=",.1f"),
        ],
    )
    lines = base.mark_line(interpolate="step-after").encode(
        strokeDash=alt.StrokeDash("phase:N", title="phase", sort=["load", "idle"])
    )
    title = "Workers over time" + ("" if len(data) else " (no samples)")
    return (
        alt.layer(lines, base.mark_point(size=12, filled=True))
        .add_params(selection)
        .properties(width=420, height=220)
        .facet(row=alt.Row("panel:N", title=None))
        .properties(title=title)
    )


def steady_chart(steady: pd.DataFrame) -> alt.FacetChart:
    """Each run's requests/s in each second: a run that settles is flat (read from the client sockets)."""
    data = steady.copy() if steady is not None and len(steady) else pd.DataFrame(columns=STEADY_COLUMNS)
    data["panel"] = (
        data["profile"].astype(str) + " · " + data["tool"].astype(str) + " · c=" + data["concurrency"].astype(str)
    )
    data["series"] = data["server"].astype(str) + " r" + data["repeat"].astype(str)
    selection = alt.selection_point(fields=["server"], bind="legend")
    base = alt.Chart(data).encode(
        x=alt.X("second:Q", title="second of the measured run", axis=alt.Axis(tickMinStep=1, format="d")),
        y=alt.Y("rps:Q", title="requests/s in that second", scale=alt.Scale(zero=True)),
        color=alt.Color("server:N", title="server"),
        strokeDash=alt.StrokeDash("language:N", title="language"),
        detail="series:N",
        opacity=alt.condition(selection, alt.value(1.0), alt.value(0.12)),
        tooltip=["server:N", "language:N", "repeat:Q", "second:Q", alt.Tooltip("rps:Q", format=",.0f")],
    )
    title = "Requests/s second by second, " + (_profiles(data) if len(data) else "no run with kept-alive connections")
    return (
        alt.layer(base.mark_line(point=True))
        .add_params(selection)
        .properties(width=420, height=220)
        .facet(row=alt.Row("panel:N", title=None))
        .properties(title=title)
    )


def build(
    name: str,
    config: dict,
    summary: pd.DataFrame,
    workers: pd.DataFrame | None = None,
    steady: pd.DataFrame | None = None,
    latency_rows: pd.DataFrame | None = None,
    verdicts: pd.DataFrame | None = None,
    panels: Sequence[tuple[ForestPanel, pd.DataFrame]] = (),
):
    """The chart ``name`` (one of ``report.names.CHARTS``) from the run's tables (``panels``: the
    forest's panels the run's lenses add, each with its verdict table)."""
    not_comparable = set(config["comparisons"]["not_comparable_flags"])
    builders = {
        **{metric: lambda metric=metric: metric_chart(summary, metric, not_comparable) for metric in METRICS},
        "languages": lambda: languages_chart(summary, config),
        "ceiling": lambda: ceiling_chart(summary, config),
        "workers": lambda: workers_chart(workers if workers is not None else pd.DataFrame()),
        "steady": lambda: steady_chart(steady),
        "load": lambda: load_chart(latency_rows, knee_bounds(config)),
        "forest": lambda: forest_chart(
            verdicts if verdicts is not None else pd.DataFrame(columns=VERDICT_COLUMNS),
            forest_margin(verdicts, config),
            panels,
            config,
        ),
    }
    assert set(builders) == set(CHARTS), "every chart in report.names has a builder"
    if name not in builders:
        raise ValueError(f"unknown chart {name!r}; known: {', '.join(sorted(builders))}")
    return builders[name]()


def save_chart(chart, html_path, png_path, svg_path=None, json_path=None) -> None:
    """The chart as its own page, as images, and as the Vega-Lite spec the index draws in place."""
    outputs = [(Path(html_path), {"inline": True}), (Path(png_path), {"scale_factor": 2})]
    outputs += [(Path(path), {}) for path in (svg_path, json_path) if path]
    with alt.data_transformers.disable_max_rows():
        for path, kwargs in outputs:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
            chart.save(str(tmp), **kwargs)
            tmp.replace(path)


def forest_margin(verdicts: pd.DataFrame | None, config: dict) -> float:
    """The band the forest plot draws: the margin most of the run's comparisons were read against."""
    used = run_margins(verdicts) if verdicts is not None else []
    return used[0] if used else margin_for(config, None, "default")
