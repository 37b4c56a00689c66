"""The cell result record and atomic file writes.

One schema for every load tool (``SCHEMA``); a result is ``ok``, ``failed``
(the server or tool misbehaved: that is data) or ``skipped`` (a program the
cell needs is absent). Files are written to a temporary name and renamed, so a
reader never sees half a result.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

SCHEMA = "serverbench.cell/1"
STATUSES = ("ok", "failed", "skipped")


def write_atomic(path: str | Path, data: str | bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: str | Path, data) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def read_json(path: str | Path):
    return json.loads(Path(path).read_text())


def new_record(cell, language: str, family: str | None = None) -> dict:
    return {
        "schema": SCHEMA,
        "cell": {
            "profile": cell.profile,
            "tool": cell.tool,
            "server": cell.server,
            "language": language,
            "family": family,
            "workload": cell.workload,
            "concurrency": cell.concurrency,
            "repeat": cell.repeat,
        },
        "status": "failed",
        "reason": "harness did not finish the cell",
        "phase": None,
        "load": None,
        "server": {},
        "client": {},
        "isolation": {},
        "verify": None,
        "timing": {},
        "raw": {},
        "flags": [],
    }
