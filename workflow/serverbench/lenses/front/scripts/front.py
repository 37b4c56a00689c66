"""One server bare and behind its fronts; the logic is in serverbench.lenses.front.measure."""

from serverbench.lenses.front.measure import run_front

# The rule's log is the servers' own output (every deployment's start appends to it).
run_front(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    json_path=snakemake.output[0],  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
