"""Makes a database server's template cluster with an app's rows; the logic is in
serverbench.cell.database."""

from pathlib import Path

from serverbench import REPO_ROOT
from serverbench.cell.database import make_template

config, wildcards = snakemake.config, snakemake.wildcards  # noqa: F821 (injected by Snakemake)
make_template(
    config["databases"][wildcards.engine],
    Path(snakemake.output[0]),  # noqa: F821
    Path(snakemake.log[0]),  # noqa: F821
    setup=config["apps"][wildcards.app].get("setup"),
    values={"apps": str(REPO_ROOT / "apps")},
)
