"""Writes seeds.csv and seed_claims.csv (serverbench.report.seeds)."""

from serverbench.report.seeds import write

write(
    snakemake.input.runs,  # noqa: F821 (injected by Snakemake)
    snakemake.input.summary,  # noqa: F821
    snakemake.input.verdicts,  # noqa: F821
    snakemake.output.side,  # noqa: F821
    snakemake.output.claims,  # noqa: F821
)
