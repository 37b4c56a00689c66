"""Commands that drive the workflow itself (run snakemake, ask PyPI): above the report stage
and the lenses, which they read through the registry."""
