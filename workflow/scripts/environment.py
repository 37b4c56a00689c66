"""Writes environment.json (serverbench.environment)."""

from serverbench.environment import collect
from serverbench.results import write_json

write_json(snakemake.output[0], collect(snakemake.config))  # noqa: F821
