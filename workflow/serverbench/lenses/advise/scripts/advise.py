"""Searches one server's settings; the logic is in serverbench.lenses.advise.measure."""

from serverbench.lenses.advise.measure import run_advise

# The rule's log is the server's own output (every setting's start appends to it).
run_advise(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    json_path=snakemake.output[0],  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
