"""Decides whether a profile needs another round (serverbench.decide.adaptive)."""

import json

from serverbench.decide.adaptive import needs_another_round
from serverbench.files import write_atomic

decision = needs_another_round(
    list(snakemake.input),  # noqa: F821 (injected by Snakemake)
    snakemake.config,  # noqa: F821
    snakemake.wildcards.profile,  # noqa: F821
    int(snakemake.wildcards.n),  # noqa: F821
)
write_atomic(snakemake.output[0], json.dumps(decision, indent=2) + "\n")  # noqa: F821
