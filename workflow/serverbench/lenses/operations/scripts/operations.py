"""Starts, weighs and reloads one server; the logic is in serverbench.lenses.operations.measure."""

from serverbench.lenses.operations.measure import run_operations

# The rule's log is the server's own output (every life appends to it).
run_operations(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    json_path=snakemake.output[0],  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
