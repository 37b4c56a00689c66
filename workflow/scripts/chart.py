"""Draws one chart from summary.csv, workers.csv or steady.csv (serverbench.charts)."""

import pandas as pd
from serverbench import charts

summary = pd.read_csv(snakemake.input.summary)  # noqa: F821 (injected by Snakemake)
workers = pd.read_csv(snakemake.input.workers)  # noqa: F821
not_comparable = set(snakemake.config["comparisons"]["not_comparable_flags"])  # noqa: F821
steady = pd.read_csv(snakemake.input.steady)  # noqa: F821
chart = charts.build(snakemake.wildcards.chart, summary, workers, not_comparable, steady)  # noqa: F821
charts.save_chart(chart, snakemake.output.html, snakemake.output.png, snakemake.output.svg)  # noqa: F821
