"""Draws index.html at a laptop's and a phone's width (serverbench.screenshots)."""

import json
from pathlib import Path

from serverbench.results import write_atomic
from serverbench.screenshots import take_all

errors = take_all(Path(snakemake.input[0]), Path(snakemake.output.desktop).parent)  # noqa: F821 (injected by Snakemake)
write_atomic(snakemake.output.console, json.dumps(errors, indent=2) + "\n")  # noqa: F821
