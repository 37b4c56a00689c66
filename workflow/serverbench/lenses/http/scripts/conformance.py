"""Probes one server's HTTP behaviour; the logic is in serverbench.lenses.http.measure."""

from serverbench.lenses.http.measure import run_conformance

run_conformance(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    json_path=snakemake.output[0],  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
