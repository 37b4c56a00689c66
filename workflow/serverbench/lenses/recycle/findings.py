"""What the recycle lens declares about a deployment (``Lens.rulings``): recycling at a set limit
holds where its restarts failed at most the lens's ``deploy_failed_per_restart`` requests each,
and is ruled out (the deployment recycles by the server's own default) where they failed more."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from serverbench.lens import Choice, Evidence, Finding, Ruling, Rulings
from serverbench.lenses.recycle.settings import RecycleSettings
from serverbench.record.vocabulary import Status

TABLE = "recycle_checks.csv"
CHECK = "recycle_failed_per_restart"
SET_LIMIT = "at a set limit"


def findings(results: Path, config: Mapping) -> list[Finding]:
    import pandas as pd

    path = results / TABLE
    if not path.exists():
        return []
    table = pd.read_csv(path)
    found = []
    for row in table[table["check"] == CHECK].to_dict("records"):
        keys = {"language": row["language"], "server": row["server"], "setting": SET_LIMIT}
        if row["status"] != Status.OK or pd.isna(row["value"]):
            sentence = f"recycle: {row['reason']}"
            found.append(Finding("recycle", Choice.RECYCLING, Ruling.NOT_MEASURED, sentence, **keys))
            continue
        allowed = RecycleSettings.from_dict(config["profiles"][row["profile"]]["recycle"]).deploy_failed_per_restart
        evidence = Evidence(row["value"], row["unit"], TABLE, f"server={row['server']}, check={CHECK}")
        ruling = Ruling.RULES_OUT if row["value"] > allowed else Ruling.STANDS
        sentence = f"recycle: {row['value']:g} requests failed per worker restart (at most {allowed:g})"
        found.append(Finding("recycle", Choice.RECYCLING, ruling, sentence, evidence, **keys))
    return found


RULINGS = Rulings(choices=(Choice.RECYCLING,), read=findings)
