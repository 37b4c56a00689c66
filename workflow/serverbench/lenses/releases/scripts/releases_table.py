"""releases.csv (serverbench.tables.releases) and release_verdicts.csv (serverbench.decide.releases)."""

import sys
from pathlib import Path

from serverbench import files
from serverbench.decide.releases import Tables, release_verdicts
from serverbench.tables.releases import read_installs, read_optional, releases_table

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    inputs = {Path(path).name: path for path in [*snakemake.input.work, *snakemake.input.operations]}  # noqa: F821
    work, operations = read_optional(inputs.get("work.csv")), read_optional(inputs.get("operations.csv"))
    conformance = read_optional(snakemake.input.conformance)  # noqa: F821
    config = snakemake.config  # noqa: F821
    table = releases_table(config, read_installs(snakemake.input.installs), work, operations, conformance)  # noqa: F821
    files.write_atomic(snakemake.output.table, table.to_csv(index=False))  # noqa: F821
    judged = [read_optional(inputs.get(name)) for name in ("work_verdicts.csv", "operations_verdicts.csv")]
    tables = Tables(*judged, conformance)
    # A release that could not be installed is in releases.csv with its reason, compared with none.
    installed = table[(table["check"] == "installed") & (table["status"] == "ok")]
    servers = {profile: sorted(set(rows["release"])) for profile, rows in installed.groupby("profile")}
    verdicts = release_verdicts(config, tables, servers)
    files.write_atomic(snakemake.output.verdicts, verdicts.to_csv(index=False))  # noqa: F821
