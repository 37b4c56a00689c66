"""A load tool built for the run (serverbench.host.programs); its record, installed or skipped
with the installer's last words, is the job's output either way."""

import os
from pathlib import Path

from serverbench import files
from serverbench.host.programs import install

record = install(snakemake.wildcards.program, Path(snakemake.log[0]), os.environ.get("PATH", ""))  # noqa: F821
files.write_json(snakemake.output[0], record.as_dict())  # noqa: F821
