"""An app's own requirements installed (serverbench.host.appsite); its record, installed or
skipped with the installer's reason, is the job's output either way."""

from pathlib import Path

from serverbench import files
from serverbench.host.appsite import install

record = install(snakemake.config, snakemake.wildcards.app, Path(snakemake.log[0]))  # noqa: F821 (injected by Snakemake)
files.write_json(snakemake.output[0], record.as_dict())  # noqa: F821
