"""The config's digest: what a result records of the config that measured it (``config_sha256``),
so a changed config re-measures and two runs of one config compare."""

from __future__ import annotations

import hashlib
import json

# Where results go says nothing of how they were measured: two runs of one config
# into two folders have one hash, so `serverbench compare` shows no false difference.
NOT_HASHED = ("results",)


def config_hash(config: dict) -> str:
    measured = {key: value for key, value in config.items() if key not in NOT_HASHED}
    return hashlib.sha256(json.dumps(measured, sort_keys=True, default=str).encode()).hexdigest()
