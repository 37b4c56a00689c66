"""The config a command reads as a run reads it: config.yaml (or the file ``--config`` names),
each of one's own config files (``--configfile``) merged over it in order, then the ``--config``
overrides over those, as snakemake merges them (``snakemake.utils.update_config``: a mapping merged
key by key, any other value replaced); then checked (``plan.config.validate``, which reads the
catalogue in beneath the config's own servers, as the workflow's first step does)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml
from snakemake.utils import update_config

from serverbench.plan import config as cfg


def read(path: Path) -> dict:
    """One config file as written (an empty file: no keys)."""
    try:
        found = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise cfg.ConfigError("configfile", f"cannot read {path}: {exc.strerror}") from None
    if not isinstance(found, dict):
        raise cfg.ConfigError("configfile", f"{path} holds no mapping of keys")
    return found


def load(base: Path, configfiles: Iterable[Path] = (), overrides: Mapping | None = None) -> dict:
    """``base`` with ``configfiles`` and then ``overrides`` merged over it, checked (a ConfigError)."""
    config = read(base)
    for path in configfiles:
        update_config(config, read(path))
    update_config(config, dict(overrides or {}))
    return cfg.validate(config)
