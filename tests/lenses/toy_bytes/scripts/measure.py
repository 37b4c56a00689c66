"""One server's answers counted in bytes (toy_bytes.measure)."""

from toy_bytes.measure import run

run(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    snakemake.wildcards.profile,  # noqa: F821
    snakemake.wildcards.server,  # noqa: F821
    json_path=snakemake.output[0],  # noqa: F821
    log_path=snakemake.log[0],  # noqa: F821
)
