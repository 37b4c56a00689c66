"""Draws every chart from the run's tables (serverbench.report.charts), in one process."""

import sys

import pandas as pd
from serverbench import registry
from serverbench.decide.verdicts import read_verdicts
from serverbench.report import charts

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

tables = {
    "workers": pd.read_csv(snakemake.input.workers),  # noqa: F821
    "steady": pd.read_csv(snakemake.input.steady),  # noqa: F821
    "latency_rows": pd.read_csv(snakemake.input.latency),  # noqa: F821
    "verdicts": read_verdicts(snakemake.input.verdicts),  # noqa: F821
    "panels": registry.forest_panels(snakemake.config, snakemake.input.forest),  # noqa: F821
}
summary = pd.read_csv(snakemake.input.summary)  # noqa: F821
for name in snakemake.params.charts:  # noqa: F821
    chart = charts.build(name, snakemake.config, summary, **tables)  # noqa: F821
    charts.save_chart(chart, *(snakemake.output[f"{name}_{ext}"] for ext in ("html", "png", "svg", "json")))  # noqa: F821
