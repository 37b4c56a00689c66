"""Writes conformance.csv from every server's probes (serverbench.lenses.http.table)."""

import sys

from serverbench.lenses.http.table import write_conformance

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

write_conformance(snakemake.input, snakemake.output[0])  # noqa: F821 (injected by Snakemake)
