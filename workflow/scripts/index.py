"""Writes index.html (serverbench.report.index)."""

import sys
from pathlib import Path

from serverbench import registry
from serverbench.report.index import write_index

# The rule's log is this job's stderr: warnings and a traceback land beside the run.
sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 (injected by Snakemake)

out = Path(snakemake.output.index)  # noqa: F821 (injected by Snakemake)
charts = {
    title: {ext: out.parent / "charts" / f"{name}.{ext}" for ext in ("html", "png", "svg", "json")}
    for name, title in snakemake.params.charts.items()  # noqa: F821
}
write_index(
    snakemake.input.summary,  # noqa: F821
    snakemake.input.verdicts,  # noqa: F821
    snakemake.input.environment,  # noqa: F821
    charts,
    out,
    language_titles=snakemake.params.languages,  # noqa: F821
    answers_path=snakemake.output.answers,  # noqa: F821
    seeds_csv=snakemake.input.seeds,  # noqa: F821
    seed_claims_csv=snakemake.input.seed_claims,  # noqa: F821
    runs_csv=snakemake.input.runs,  # noqa: F821
    sections=registry.sections(snakemake.config, snakemake.input.lenses, snakemake.params.languages),  # noqa: F821
)
