"""Decides whether a cell needs another repeat (serverbench.adaptive)."""

import json

from serverbench.adaptive import decide
from serverbench.config import effective_profile
from serverbench.results import write_atomic

config = snakemake.config  # noqa: F821 (injected by Snakemake)
decision = decide(
    list(snakemake.input),  # noqa: F821
    effective_profile(config, snakemake.wildcards.profile),  # noqa: F821
    config["comparisons"]["confidence"],
    config["seed"],
)
write_atomic(snakemake.output[0], json.dumps(decision, indent=2) + "\n")  # noqa: F821
