"""Stops one server under load; the logic is in serverbench.lenses.shutdown.measure."""

from serverbench.lenses.shutdown.measure import run_shutdown

# The rule's log is the server's own output (every stop appends to it).
run_shutdown(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    json_path=snakemake.output[0],  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
