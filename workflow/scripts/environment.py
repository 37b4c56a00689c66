"""Writes environment.json (serverbench.host.environment)."""

from serverbench.files import write_json
from serverbench.host.environment import collect

write_json(snakemake.output[0], collect(snakemake.config))  # noqa: F821
