"""Counts one server's work per request; the logic is in serverbench.lenses.work.measure."""

from serverbench.lenses.work.measure import run_work

run_work(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    snakemake.wildcards.workload,  # noqa: F821
    json_path=snakemake.output.record,  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
