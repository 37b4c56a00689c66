"""Writes one server's capacity from its closed-loop cells (serverbench.latency)."""

from serverbench.latency import write_capacity

write_capacity(snakemake.input, snakemake.output[0], snakemake.config)  # noqa: F821 (injected by Snakemake)
