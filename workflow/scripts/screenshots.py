"""Draws index.html at a laptop's and a phone's width, and checks how it lays out there
(serverbench.report.screenshots)."""

import json
import sys
from pathlib import Path

from serverbench.files import write_atomic
from serverbench.report.names import CHARTS
from serverbench.report.screenshots import check_all, take_all

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

index = Path(snakemake.input[0])  # noqa: F821 (injected by Snakemake)
errors = take_all(index, Path(snakemake.output.desktop).parent)  # noqa: F821
write_atomic(snakemake.output.console, json.dumps(errors, indent=2) + "\n")  # noqa: F821
write_atomic(snakemake.output.layout, json.dumps(check_all(index, CHARTS["forest"]), indent=2) + "\n")  # noqa: F821
