"""Draws one chart from the run's tables (serverbench.report.charts)."""

import sys

import pandas as pd
from serverbench import registry
from serverbench.decide.verdicts import read_verdicts
from serverbench.report import charts

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

chart = charts.build(
    snakemake.wildcards.chart,  # noqa: F821 (injected by Snakemake)
    snakemake.config,  # noqa: F821
    pd.read_csv(snakemake.input.summary),  # noqa: F821
    workers=pd.read_csv(snakemake.input.workers),  # noqa: F821
    steady=pd.read_csv(snakemake.input.steady),  # noqa: F821
    latency_rows=pd.read_csv(snakemake.input.latency),  # noqa: F821
    verdicts=read_verdicts(snakemake.input.verdicts),  # noqa: F821
    panels=registry.forest_panels(snakemake.config, snakemake.input.forest),  # noqa: F821
)
charts.save_chart(
    chart,
    snakemake.output.html,  # noqa: F821
    snakemake.output.png,  # noqa: F821
    snakemake.output.svg,  # noqa: F821
    snakemake.output.json,  # noqa: F821
)
