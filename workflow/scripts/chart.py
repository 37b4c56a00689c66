"""Draws one chart from summary.csv, workers.csv, steady.csv or latency.csv (serverbench.charts)."""

import pandas as pd
from serverbench import charts
from serverbench.latency import knee_multiples

summary = pd.read_csv(snakemake.input.summary)  # noqa: F821 (injected by Snakemake)
workers = pd.read_csv(snakemake.input.workers)  # noqa: F821
not_comparable = set(snakemake.config["comparisons"]["not_comparable_flags"])  # noqa: F821
steady = pd.read_csv(snakemake.input.steady)  # noqa: F821
latency_rows = pd.read_csv(snakemake.input.latency)  # noqa: F821
multiples = knee_multiples(snakemake.config)  # noqa: F821
chart = charts.build(
    snakemake.wildcards.chart,  # noqa: F821
    summary,
    workers,
    not_comparable,
    steady,
    latency_rows,
    multiples,
)
charts.save_chart(chart, snakemake.output.html, snakemake.output.png, snakemake.output.svg)  # noqa: F821
