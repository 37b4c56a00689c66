"""Writes index.html (serverbench.charts.write_index)."""

from pathlib import Path

from serverbench.charts import write_index

out = Path(snakemake.output[0])  # noqa: F821 (injected by Snakemake)
charts = {
    title: (out.parent / "charts" / f"{name}.html", out.parent / "charts" / f"{name}.png")
    for title, name in snakemake.params.charts.items()  # noqa: F821
}
write_index(snakemake.input.summary, snakemake.input.environment, charts, out)  # noqa: F821
