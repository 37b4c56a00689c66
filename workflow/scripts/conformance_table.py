"""Writes conformance.csv from every server's probes (serverbench.tables.conformance)."""

from serverbench.tables.conformance import write_conformance

write_conformance(snakemake.input, snakemake.output[0])  # noqa: F821 (injected by Snakemake)
