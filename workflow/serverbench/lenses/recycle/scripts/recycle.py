"""Restarts one server's workers under load; the logic is in serverbench.lenses.recycle.measure."""

from serverbench.lenses.recycle.measure import run_recycle

# The rule's log is the server's own output (every run appends to it).
run_recycle(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    json_path=snakemake.output[0],  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
