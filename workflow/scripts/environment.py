"""Writes environment.json (serverbench.host.environment)."""

import sys

from serverbench.files import write_json
from serverbench.host.environment import collect

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

write_json(snakemake.output[0], collect(snakemake.config))  # noqa: F821
