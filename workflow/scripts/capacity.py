"""Writes one server's capacity from its closed-loop cells (serverbench.tables.latency)."""

from serverbench.decide.capacity import write_capacity

write_capacity(snakemake.input, snakemake.output[0], snakemake.config)  # noqa: F821 (injected by Snakemake)
