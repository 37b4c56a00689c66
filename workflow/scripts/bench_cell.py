"""Runs one cell; the logic is in serverbench.cell."""

from serverbench.cell import run_cell
from serverbench.config import Cell

wildcards = snakemake.wildcards  # noqa: F821 (injected by Snakemake)
cell = Cell(
    profile=wildcards.profile,
    tool=wildcards.tool,
    server=wildcards.server,
    concurrency=int(wildcards.concurrency),
    repeat=int(wildcards.repeat),
    workload=wildcards.workload,
)
run_cell(
    snakemake.config,  # noqa: F821
    cell,
    json_path=snakemake.output.result,  # noqa: F821
    raw_path=snakemake.output.raw,  # noqa: F821
    log_path=snakemake.log.server,  # noqa: F821
)
