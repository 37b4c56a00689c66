"""Prints a lens's answer as soon as its tables are made, and keeps it as text
(serverbench.registry.console_text)."""

import sys

from serverbench import files, registry

lens = snakemake.wildcards.lens  # noqa: F821 (injected by Snakemake)
with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821
    text = registry.console_text(snakemake.config, snakemake.config["results"], lens)  # noqa: F821
    files.write_atomic(snakemake.output[0], text)  # noqa: F821
if text:  # a section without console lines (operations') prints nothing, as before
    print(f"\nserverbench: the {lens} lens has answered:{text}", flush=True)
