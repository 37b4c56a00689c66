"""Atomic file writes, JSON, and the config's digest.

Files are written to a temporary name and renamed, so a reader never sees
half a result. The record's shape is ``serverbench.model.CellRecord``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path


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


# Where results go says nothing of how they were measured: two runs of one config
# into two folders have one hash, so `serverbench compare` shows no false difference.
NOT_HASHED = ("results",)


def config_hash(config: dict) -> str:
    measured = {key: value for key, value in config.items() if key not in NOT_HASHED}
    return hashlib.sha256(json.dumps(measured, sort_keys=True, default=str).encode()).hexdigest()


def read_json(path: str | Path):
    return json.loads(Path(path).read_text())
