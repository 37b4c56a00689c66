"""What the operations lens declares about a deployment (``Lens.rulings``): a server failing more
requests per graceful reload under load than the lens's ``deploy_failed_per_reload`` is ruled out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from serverbench.lens import Choice, Evidence, Finding, Ruling, Rulings
from serverbench.lenses.operations.settings import OperationsSettings
from serverbench.record.vocabulary import Status

TABLE = "operations.csv"
CHECK = "reload_failed"


def findings(results: Path, config: Mapping) -> list[Finding]:
    import pandas as pd

    path = results / TABLE
    if not path.exists():
        return []
    table = pd.read_csv(path)
    found = []
    for row in table[table["check"] == CHECK].to_dict("records"):
        keys = {"language": row["language"], "server": row["server"]}
        if row["status"] != Status.OK or pd.isna(row["value"]):
            sentence = f"operations could not reload it under load: {row['reason']}"
            found.append(Finding("operations", Choice.SERVER, Ruling.NOT_MEASURED, sentence, **keys))
            continue
        allowed = OperationsSettings.from_dict(
            config["profiles"][row["profile"]]["operations"]
        ).deploy_failed_per_reload
        evidence = Evidence(
            row["value"], f"{row['unit']} failed per reload", TABLE, f"server={row['server']}, check={CHECK}"
        )
        ruling = Ruling.RULES_OUT if row["value"] > allowed else Ruling.STANDS
        sentence = f"operations: {row['value']:g} requests failed per graceful reload under load (at most {allowed:g})"
        found.append(Finding("operations", Choice.SERVER, ruling, sentence, evidence, **keys))
    return found


RULINGS = Rulings(choices=(Choice.SERVER,), read=findings)
