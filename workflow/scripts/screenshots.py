"""Draws index.html at a laptop's and a phone's width and checks how it lays out there
(serverbench.report.screenshots.shoot); where no browser is installed, a status that says so."""

import sys
from pathlib import Path

from serverbench.record.vocabulary import Status
from serverbench.report.names import CHARTS
from serverbench.report.screenshots import shoot

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

status = shoot(Path(snakemake.input[0]), Path(snakemake.output[0]), CHARTS["forest"])  # noqa: F821
if status["status"] != Status.OK:
    print(f"screenshots {status['status']}: {status['reason']}", file=sys.stderr)
