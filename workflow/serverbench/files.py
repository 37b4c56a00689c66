"""Writing files atomically, and reading JSON back.

Files are written to a temporary name and renamed, so a reader never sees
half a result: every stage writes its outputs through here.
"""

from __future__ import annotations

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


def read_json(path: str | Path):
    return json.loads(Path(path).read_text())
