"""Decides whether a profile needs another round (serverbench.decide.adaptive)."""

import json
import sys

from serverbench.decide.adaptive import needs_another_round
from serverbench.files import write_atomic

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

decision = needs_another_round(
    list(snakemake.input.rounds),  # noqa: F821 (injected by Snakemake)
    snakemake.config,  # noqa: F821
    snakemake.wildcards.profile,  # noqa: F821
    int(snakemake.wildcards.n),  # noqa: F821
    before_paths=list(snakemake.input.before),  # noqa: F821
)
write_atomic(snakemake.output[0], json.dumps(decision, indent=2) + "\n")  # noqa: F821
