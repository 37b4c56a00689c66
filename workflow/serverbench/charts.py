"""Altair charts from ``summary.csv`` and the ``index.html`` that shows them.

The seed study's five charts (requests/s, latency, memory, error rate, CPU,
each against concurrency), Python against Perl, and each server against the
nginx ceiling. Charts are saved as self-contained HTML (Vega libraries
inlined, so they work offline), PNG and SVG through vl-convert. The summary
is one row per cell and only the columns a chart uses are embedded, so chart
data stays small whatever the size of the matrix.
"""

from __future__ import annotations

import json
from pathlib import Path

import altair as alt
import jinja2
import pandas as pd
from markupsafe import Markup

from serverbench import hostspeed, latency, results
from serverbench.flags import FLAG_HELP
from serverbench.model import DEFAULT_WORKLOAD, STEADY_COLUMNS, WORKER_COLUMNS
from serverbench.verdicts import answers, flag_set, why_not_comparable

# name: (title, y title, [(column, label)], log scale for y)
METRICS = {
    "rps": ("Requests per second", "requests/s", [("rps_trimmed_mean", "req/s")], False),
    "latency": ("Latency", "latency (ms)", [("latency_p50_ms", "p50"), ("latency_p99_ms", "p99")], True),
    "memory": ("Server memory", "MB", [("server_rss_peak_mb", "RSS peak"), ("server_pss_peak_mb", "PSS peak")], False),
    "errors": ("Error rate", "errors / requests", [("error_rate", "error rate")], False),
    "cpu": ("Server CPU", "CPU % (100 = one CPU)", [("server_cpu_percent", "CPU %")], False),
}
EXTRA_CHARTS = {
    "languages": "Python against Perl",
    "ceiling": "Share of the nginx ceiling",
    "workers": "Workers over time (autoscaling)",
    "steady": "Requests/s second by second (steady state)",
    "load": "Latency against offered load (open loop)",
}
CHARTS = {name: spec[0] for name, spec in METRICS.items()} | EXTRA_CHARTS
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


def measured(summary: pd.DataFrame, not_comparable: set[str] | None = None) -> pd.DataFrame:
    """Rows with numbers, plus the fields every chart uses."""
    data = summary[summary["status"].isin(["ok", "partial"])].copy()
    for column in ("family", "flags", "keepalive", "server_version", "interpreter"):
        if column not in data:
            data[column] = None
    # Marked where a flag disqualifies the figure (comparisons.not_comparable_flags), or any flag
    # when no such list is given; every flag is in the tooltip either way.
    flags = data["flags"].map(flag_set)
    data["flags"] = data["flags"].fillna("").astype(str)
    data["flagged"] = flags.map(lambda f: bool(f & not_comparable) if not_comparable is not None else bool(f))
    data["family"] = data["family"].fillna("")
    if "workload" not in data:
        data["workload"] = DEFAULT_WORKLOAD
    data["workload"] = data["workload"].fillna(DEFAULT_WORKLOAD).astype(str)
    data["panel"] = (
        data["profile"].astype(str)
        + " · "
        + data["tool"].astype(str)
        + data["workload"].map(lambda w: "" if w == DEFAULT_WORKLOAD else f" · {w}")
    )
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


def metric_chart(summary: pd.DataFrame, metric: str, not_comparable: set[str] | None = None) -> alt.FacetChart:
    """One of the seed study's five charts, faceted by profile · tool (rows) and measure."""
    title, y_title, columns, log = METRICS[metric]
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


def comparable(data: pd.DataFrame, not_comparable: set[str]) -> pd.Series:
    """Rows whose figure may decide (verdicts.why_not_comparable finds no reason against it)."""
    if data.empty:
        return pd.Series(dtype=bool, index=data.index)
    return data.apply(lambda row: not why_not_comparable(row, not_comparable), axis=1).astype(bool)


def languages_chart(summary: pd.DataFrame, not_comparable: set[str] = frozenset()) -> alt.VConcatChart:
    """Python against Perl: families present in both languages, and the best comparable server of each."""
    data = measured(summary, not_comparable)
    selection = alt.selection_point(fields=["server"], bind="legend")
    both = data.groupby("family")["language"].transform(lambda s: {"python", "perl"} <= set(s))
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
    languages = data[data["language"].isin(["python", "perl"]) & comparable(data, set(not_comparable))]
    keys = ["panel", "language", "concurrency"]
    best = languages.loc[languages.groupby(keys)["rps_trimmed_mean"].idxmax().dropna()]
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


def ceiling_chart(
    summary: pd.DataFrame, baseline: str = "nginx-baseline", not_comparable: set[str] | None = None
) -> alt.FacetChart:
    """Each server's requests/s as a share of nginx answering by itself, same profile, tool, concurrency."""
    data = measured(summary, not_comparable)
    keys = ["profile", "workload", "tool", "concurrency"]
    ceiling = data[data["server"] == baseline].set_index(keys)["rps_trimmed_mean"]
    data = data[data["server"] != baseline].copy()
    index = pd.MultiIndex.from_frame(data[keys])
    data["ceiling_rps"] = ceiling.reindex(index).to_numpy()
    data["share"] = data["rps_trimmed_mean"] / data["ceiling_rps"]
    data = data.dropna(subset=["share"])
    selection = alt.selection_point(fields=["server"], bind="legend")
    base = alt.Chart(_columns(data, ["share", "ceiling_rps"])).encode(
        x=_x(data["concurrency"]),
        y=alt.Y("share:Q", title=f"share of {baseline} req/s", axis=alt.Axis(format="%")),
        color=alt.Color("server:N"),
        opacity=alt.condition(selection, alt.value(1.0), alt.value(0.12)),
        tooltip=[*TOOLTIP, alt.Tooltip("share:Q", format=".1%"), alt.Tooltip("ceiling_rps:Q", format=",.0f")],
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
        alt.layer(base.mark_line(point=True)).add_params(selection)
        .properties(width=420, height=220)
        .facet(row=alt.Row("panel:N", title=None))
        .properties(title=title)
    )  # fmt: skip


def _load_points(latency_rows: pd.DataFrame, multiples: dict) -> pd.DataFrame:
    """Per server and fraction: median p50 and p99 of the ok rate cells, and whether it is the knee."""
    ok = latency_rows[(latency_rows["status"] == "ok") & latency_rows["latency_p99_ms"].notna()]
    keys = ["profile", "workload", "tool", "server", "language", "fraction"]
    points = ok.groupby(keys, as_index=False).agg(
        offered_rps=("offered_rps", "median"), p50=("latency_p50_ms", "median"), p99=("latency_p99_ms", "median")
    )
    found = latency.knees(latency_rows, multiples).set_index(["profile", "workload", "server"])["knee_fraction"]
    knee_of = found.reindex(pd.MultiIndex.from_frame(points[["profile", "workload", "server"]])).to_numpy()
    points["knee"] = points["fraction"] == knee_of
    long = points.melt(
        id_vars=[*keys, "offered_rps", "knee"], value_vars=["p50", "p99"], var_name="percentile", value_name="ms"
    )
    long["panel"] = (
        long["profile"]
        + " · "
        + long["tool"]
        + long["workload"].map(lambda w: "" if w == DEFAULT_WORKLOAD else f" · {w}")
    )
    return long[long["ms"] > 0]


def _fraction_axis(data: pd.DataFrame) -> alt.Axis:
    """Ticks exactly at the fractions offered."""
    return alt.Axis(values=sorted({float(f) for f in data["fraction"]}), format=".2~f")


def load_chart(latency_rows: pd.DataFrame | None, multiples: dict | None = None) -> alt.HConcatChart:
    """p99 (thick) and p50 (thin) against offered req/s and against the fraction of each server's own
    capacity; a line per server, dashed by language, log latency; the knee a filled diamond."""
    rows = latency_rows if latency_rows is not None else pd.DataFrame(columns=latency.LATENCY_COLUMNS)
    data = (
        _load_points(rows, multiples or {})
        if len(rows)
        else pd.DataFrame(
            columns=["panel", "server", "language", "fraction", "offered_rps", "knee", "percentile", "ms"]
        )
    )
    selection = alt.selection_point(fields=["server"], bind="legend")
    tooltip = ["server:N", "language:N", "percentile:N", alt.Tooltip("fraction:Q", format=".2f"),
               alt.Tooltip("offered_rps:Q", format=",.0f"), alt.Tooltip("ms:Q", format=".3g"), "knee:N"]  # fmt: skip
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
        marks = [lines, knee.mark_point(shape="diamond", size=160, filled=True),
                 knee.mark_text(align="left", dx=8, dy=-8, fontSize=11).encode(text=alt.value("knee"))]  # fmt: skip
        layered = alt.layer(*marks, data=data).properties(width=340, height=240)
        # The legend's selection is declared once (in the first panel) and highlights both.
        layered = layered if panels else layered.add_params(selection)
        panels.append(layered.facet(row=alt.Row("panel:N", title=None)))
    title = "Latency against offered load (open loop, coordinated omission corrected)"
    return alt.hconcat(*panels).properties(title=title + ("" if len(data) else ": no rate cells in this run"))


def build(
    name: str,
    summary: pd.DataFrame,
    workers: pd.DataFrame | None = None,
    not_comparable=frozenset(),
    steady=None,
    latency_rows=None,
    multiples=None,
):
    if name == "load":
        return load_chart(latency_rows, multiples)
    if name == "steady":
        return steady_chart(steady)
    if name in METRICS:
        return metric_chart(summary, name, set(not_comparable) or None)
    if name == "workers":
        return workers_chart(workers if workers is not None else pd.DataFrame())
    if name == "languages":
        return languages_chart(summary, set(not_comparable))
    return ceiling_chart(summary, not_comparable=set(not_comparable) or None)


def save_chart(chart, html_path, png_path, svg_path=None) -> None:
    outputs = [(Path(html_path), {"inline": True}), (Path(png_path), {"scale_factor": 2})]
    if svg_path:
        outputs.append((Path(svg_path), {}))
    with alt.data_transformers.disable_max_rows():
        for path, kwargs in outputs:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
            chart.save(str(tmp), **kwargs)
            tmp.replace(path)


SUMMARY_COLUMNS = [
    "profile", "tool", "server", "language", "family", "concurrency", "status", "repeats_ok",
    "rps_trimmed_mean", "rps_cv", "latency_p50_ms", "latency_p99_ms", "error_rate",
    "server_rss_peak_mb", "server_pss_peak_mb", "server_cpu_percent", "keepalive", "flags",
]  # fmt: skip
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("serverbench", "templates"),
    autoescape=jinja2.select_autoescape(default=True),
    undefined=jinja2.StrictUndefined,
)


def _table(frame: pd.DataFrame, columns: list[str], sortable: bool = False) -> Markup:
    present = [c for c in columns if c in frame.columns]
    classes = "sortable" if sortable else None
    # pandas escapes every cell (escape=True): the markup is safe to insert.
    table = frame[present].to_html(
        index=False, na_rep="", float_format=lambda v: f"{v:,.3g}", border=0, classes=classes
    )
    return Markup(table)


def index_context(summary: pd.DataFrame, environment: dict, charts: dict, index_dir: Path) -> dict:
    """What index.html shows: the charts (relative links), the tables, the environment."""
    bad = summary[summary["status"] != "ok"]
    flagged = summary[summary["flags"].fillna("") != ""]
    return {
        "cells": len(summary),
        "statuses": ", ".join(f"{n} {s}" for s, n in summary["status"].value_counts().items()),
        "environment": {key: environment.get(key) for key in ("cpu_model", "cpus", "kernel", "git_commit")},
        "machine": hostspeed.describe(environment.get("host_speed")),
        "charts": [
            {
                "title": title,
                "links": {ext: Path(path).relative_to(index_dir).as_posix() for ext, path in files.items()},
            }
            for title, files in charts.items()
        ],
        "summary_table": _table(summary, SUMMARY_COLUMNS, sortable=True),
        "failed_count": len(bad),
        "failed_table": _table(bad, ["profile", "tool", "server", "concurrency", "status", "reason"])
        if len(bad)
        else None,
        "flagged_count": len(flagged),
        "flagged_table": _table(flagged, ["profile", "tool", "server", "concurrency", "flags"])
        if len(flagged)
        else None,
        "flag_help": FLAG_HELP,
        "environment_json": json.dumps(environment, indent=2),
    }


def write_index(summary_csv, verdicts_csv, environment_json, charts: dict, index_path) -> None:
    """One page: the answers, then charts, the sortable summary, failed and flagged cells, the environment."""
    index_path = Path(index_path)
    summary = pd.read_csv(summary_csv)
    environment = json.loads(Path(environment_json).read_text()) if environment_json else {}
    context = index_context(summary, environment, charts, index_path.parent)
    context["answers"] = answers(pd.read_csv(verdicts_csv))
    results.write_atomic(index_path, TEMPLATES.get_template("index.html.j2").render(**context))
