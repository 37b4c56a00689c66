"""One release installed into its prefix (serverbench.host.releases); its record, installed or
skipped with pip's reason, is the job's output either way."""

from pathlib import Path

from serverbench import files
from serverbench.host.releases import install
from serverbench.plan.catalogue import Release
from serverbench.plan.releases import release_spec

wildcards = snakemake.wildcards  # noqa: F821 (injected by Snakemake)
spec = release_spec(snakemake.config, wildcards.package, wildcards.version)  # noqa: F821
record = install(Release(of=wildcards.package, **spec), Path(snakemake.log[0]))  # noqa: F821
files.write_json(snakemake.output[0], record.as_dict())  # noqa: F821
