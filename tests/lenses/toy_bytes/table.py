"""toy_bytes.csv: a row per (profile, server), its median answer size."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd

from toy_bytes.record import load

COLUMNS = ["profile", "server", "status", "reason", "bytes", "answers"]


def table(paths) -> pd.DataFrame:
    rows = []
    for path in paths:
        record = load(json.loads(Path(path).read_text()))
        size = statistics.median(record.sizes) if record.sizes else None
        rows.append({"profile": record.profile, "server": record.server, "status": str(record.status),
                     "reason": record.reason, "bytes": size, "answers": len(record.sizes)})  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
