"""Decides whether a cell needs another repeat (serverbench.decide.adaptive)."""

import json

from serverbench.decide.adaptive import needs_another_repeat
from serverbench.files import write_atomic
from serverbench.plan.config import effective_profile

config = snakemake.config  # noqa: F821 (injected by Snakemake)
decision = needs_another_repeat(
    list(snakemake.input),  # noqa: F821
    effective_profile(config, snakemake.wildcards.profile),  # noqa: F821
    config["comparisons"]["confidence"],
    config["seed"],
)
write_atomic(snakemake.output[0], json.dumps(decision, indent=2) + "\n")  # noqa: F821
