"""Writes seeds.csv and seed_claims.csv (serverbench.report.seeds)."""

import sys

from serverbench.report.seeds import write

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

write(
    snakemake.input.runs,  # noqa: F821 (injected by Snakemake)
    snakemake.input.summary,  # noqa: F821
    snakemake.input.verdicts,  # noqa: F821
    snakemake.output.side,  # noqa: F821
    snakemake.output.claims,  # noqa: F821
)
