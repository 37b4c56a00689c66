"""Writes one server's capacity from its closed-loop cells (serverbench.tables.latency)."""

import sys

from serverbench.decide.capacity import write_capacity

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

write_capacity(snakemake.input, snakemake.output[0], snakemake.config)  # noqa: F821 (injected by Snakemake)
