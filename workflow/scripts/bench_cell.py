"""Runs one cell; the logic is in serverbench.cell.phases."""

from serverbench.cell.phases import run_cell
from serverbench.plan.shapes import Cell

run_cell(
    snakemake.config,  # noqa: F821 (injected by Snakemake)
    Cell.from_wildcards(snakemake.wildcards),  # noqa: F821
    json_path=snakemake.output.result,  # noqa: F821
    raw_path=snakemake.output.raw,  # noqa: F821
    log_path=snakemake.log.server,  # noqa: F821
    position=snakemake.resources.run_position or None,  # noqa: F821
    capacity_path=getattr(snakemake.input, "capacity", None),  # noqa: F821 (rate cells only)
)
