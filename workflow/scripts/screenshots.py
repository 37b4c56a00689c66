"""Draws index.html at a laptop's and a phone's width (serverbench.report.screenshots)."""

import json
from pathlib import Path

from serverbench.files import write_atomic
from serverbench.report.screenshots import take_all

errors = take_all(Path(snakemake.input[0]), Path(snakemake.output.desktop).parent)  # noqa: F821 (injected by Snakemake)
write_atomic(snakemake.output.console, json.dumps(errors, indent=2) + "\n")  # noqa: F821
