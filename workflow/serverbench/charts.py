"""Altair charts from ``summary.csv`` and the ``index.html`` that shows them.

Charts are saved as self-contained HTML (Vega libraries inlined, so they work
offline) and as PNG through vl-convert. The summary is already one row per
cell, so chart data stays small whatever the size of the matrix.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import altair as alt
import pandas as pd

from serverbench import results
from serverbench.flags import FLAG_HELP

TOOLTIP = [
    alt.Tooltip("server:N"),
    alt.Tooltip("language:N"),
    alt.Tooltip("profile:N"),
    alt.Tooltip("tool:N"),
    alt.Tooltip("concurrency:Q"),
    alt.Tooltip("rps_trimmed_mean:Q", title="req/s (trimmed mean)", format=",.0f"),
    alt.Tooltip("rps_min:Q", title="req/s min", format=",.0f"),
    alt.Tooltip("rps_max:Q", title="req/s max", format=",.0f"),
    alt.Tooltip("rps_cv:Q", title="req/s CV", format=".1%"),
    alt.Tooltip("latency_p50_ms:Q", title="p50 ms", format=".2f"),
    alt.Tooltip("latency_p99_ms:Q", title="p99 ms", format=".2f"),
    alt.Tooltip("error_rate:Q", title="error rate", format=".2%"),
    alt.Tooltip("server_rss_peak_mb:Q", title="RSS peak MB", format=".1f"),
    alt.Tooltip("server_cpu_percent:Q", title="server CPU %", format=".0f"),
    alt.Tooltip("flags:N"),
    alt.Tooltip("server_version:N", title="version"),
    alt.Tooltip("interpreter:N"),
]


def rps_chart(summary: pd.DataFrame) -> alt.Chart:
    """Requests/s against concurrency: a line per server, dashed by language."""
    data = summary[summary["status"].isin(["ok", "partial"])].copy()
    data["flagged"] = data["flags"].fillna("").astype(str).str.len() > 0
    selection = alt.selection_point(fields=["server"], bind="legend")
    base = alt.Chart(data).encode(
        x=alt.X("concurrency:Q", scale=alt.Scale(type="log"), title="concurrent connections"),
        y=alt.Y("rps_trimmed_mean:Q", title="requests/s (trimmed mean of repeats)"),
        color=alt.Color("server:N", title="server"),
        opacity=alt.condition(selection, alt.value(1.0), alt.value(0.15)),
        tooltip=TOOLTIP,
    )
    lines = base.mark_line().encode(strokeDash=alt.StrokeDash("language:N", title="language"))
    points = base.mark_point(size=60, filled=False, strokeWidth=2).encode(
        fill=alt.condition("datum.flagged", alt.value("white"), alt.Color("server:N", legend=None)),
    )
    chart = (lines + points).add_params(selection).properties(width=420, height=280)
    facets = [c for c in ("profile", "tool") if data[c].nunique() > 1]
    if facets:
        chart = chart.facet(
            row=alt.Row(f"{facets[0]}:N"),
            **({"column": alt.Column(f"{facets[1]}:N")} if len(facets) > 1 else {}),
        )
    return chart.properties(title="Requests per second against concurrency (hollow marker: flagged)")


def save_chart(chart: alt.Chart, html_path: str | Path, png_path: str | Path) -> None:
    html_path, png_path = Path(html_path), Path(png_path)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    for path, kwargs in ((html_path, {"inline": True}), (png_path, {"scale_factor": 2})):
        tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
        chart.save(str(tmp), **kwargs)
        tmp.replace(path)


def _table(frame: pd.DataFrame, columns: list[str]) -> str:
    present = [c for c in columns if c in frame.columns]
    return frame[present].to_html(index=False, na_rep="", float_format=lambda v: f"{v:,.3g}", border=0)


def write_index(summary_csv, environment_json, charts: dict, index_path) -> None:
    """One page: charts, the summary table, failed and flagged cells, the environment."""
    index_path = Path(index_path)
    summary = pd.read_csv(summary_csv)
    environment = json.loads(Path(environment_json).read_text()) if environment_json else {}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>serverbench results</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
        "td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}"
        "iframe{border:0;width:100%;height:560px}</style></head><body>",
        "<h1>serverbench results</h1>",
    ]
    for title, (html_file, png_file) in charts.items():
        rel_html = Path(html_file).relative_to(index_path.parent)
        rel_png = Path(png_file).relative_to(index_path.parent)
        parts.append(
            f"<h2>{html.escape(title)}</h2><iframe src='{rel_html}' title='{html.escape(title)}'></iframe>"
            f"<p><a href='{rel_html}'>interactive</a> · <a href='{rel_png}'>PNG</a></p>"
        )
    parts.append("<h2>Summary</h2>")
    parts.append(
        _table(
            summary,
            [
                "profile",
                "tool",
                "server",
                "language",
                "concurrency",
                "status",
                "repeats_ok",
                "rps_trimmed_mean",
                "rps_cv",
                "latency_p50_ms",
                "latency_p99_ms",
                "error_rate",
                "server_rss_peak_mb",
                "server_cpu_percent",
                "keepalive",
                "flags",
            ],
        )
    )
    bad = summary[summary["status"] != "ok"]
    parts.append(f"<h2>Failed and skipped cells ({len(bad)})</h2>")
    parts.append(
        _table(bad, ["profile", "tool", "server", "concurrency", "status", "reason"]) if len(bad) else "<p>none</p>"
    )
    flagged = summary[summary["flags"].fillna("") != ""]
    parts.append(f"<h2>Flagged cells ({len(flagged)})</h2>")
    parts.append(
        _table(flagged, ["profile", "tool", "server", "concurrency", "flags"]) if len(flagged) else "<p>none</p>"
    )
    parts.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{html.escape(v)}</dd>" for k, v in FLAG_HELP.items()) + "</dl>")
    parts.append("<h2>Environment</h2><pre>" + html.escape(json.dumps(environment, indent=2)) + "</pre>")
    parts.append("</body></html>")
    results.write_atomic(index_path, "\n".join(parts))
