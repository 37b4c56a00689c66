"""The config's schema: config.schema.yaml, the catalogue's own schema in its place and each
lens's settings (its folder's ``settings.schema.yaml``) in a profile's; checked with the
schema's defaults written in (the one place defaults live), every error naming its key path."""

from __future__ import annotations

import copy
import functools
import importlib.util
from pathlib import Path

import yaml

from serverbench import REPO_ROOT

SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
CATALOGUE_SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "catalogue.schema.yaml"
# A lens's own settings: its folder's schema fragment (lens_settings_schemas).
LENS_FOLDERS = REPO_ROOT / "workflow" / "serverbench" / "lenses"
LENS_SETTINGS_SCHEMA = "settings.schema.yaml"


class ConfigError(ValueError):
    """A configuration problem, with the key path it concerns."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"config error at {path or '<top>'}: {message}")


def _key_path(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _lens_folders(packages) -> list[Path]:
    """The built-in lenses' folders, then those of the packages config ``lenses`` names (found,
    not imported: the plan stage runs no lens code)."""
    folders = sorted(path for path in LENS_FOLDERS.iterdir() if path.is_dir())
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        folders += [Path(location) for location in (spec.submodule_search_locations or [])] if spec else []
    return folders


def lens_settings_schemas(packages=()) -> dict[str, dict]:
    """Each lens's own settings, as its folder declares them (``settings.schema.yaml``: the
    profile key that asks for it and that key's schema), by profile key: read as files, so the
    plan stage names no lens. ``packages``: the lenses a config adds (its ``lenses``)."""
    found = {}
    for path in (folder / LENS_SETTINGS_SCHEMA for folder in _lens_folders(packages)):
        if path.is_file():
            declared = yaml.safe_load(path.read_text())
            found[declared["profile_key"]] = declared["schema"]
    return found


def load_schema(packages=()) -> dict:
    """config.schema.yaml with the catalogue's own schema in its place and each lens's settings
    in a profile's (one validation, one kind of error path: catalogue.NAME.KEY, profiles.P.KEY)."""
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    catalogue = yaml.safe_load(CATALOGUE_SCHEMA_PATH.read_text())
    catalogue.pop("$schema", None)
    schema["properties"]["catalogue"] = {**catalogue, "description": schema["properties"]["catalogue"]["description"]}
    profile = schema["properties"]["profiles"]["additionalProperties"]["properties"]
    for key, settings in lens_settings_schemas(packages).items():
        if key in profile:
            raise ConfigError("schema", f"a lens's settings key {key!r} is a core profile key")
        profile[key] = settings
    return schema


@functools.cache
def _defaulting_validator():
    """A Draft 2020-12 validator that also writes each property's schema ``default``
    where the config leaves it out, so defaults live in the schema alone. Made on first
    use: a cell's job reads a config already checked, and importing jsonschema took
    60-80 ms of every job's start."""
    import jsonschema

    check_properties = jsonschema.Draft202012Validator.VALIDATORS["properties"]

    def properties(validator, declared, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in declared.items():
                if "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from check_properties(validator, declared, instance, schema)

    return jsonschema.validators.extend(jsonschema.Draft202012Validator, {"properties": properties})


def check_schema(config: dict) -> None:
    """Check ``config`` against the schema, writing its defaults in; raise ConfigError."""
    import jsonschema

    added = config.get("lenses")
    validator = _defaulting_validator()(load_schema(tuple(added) if isinstance(added, list) else ()))
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.path), list(map(str, e.path))))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    path = _key_path(error.absolute_path)
    message = error.message
    if error.validator == "oneOf" and error.context:
        # The nearest alternative says more than "is not valid under any of".
        message = jsonschema.exceptions.best_match(error.context).message
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        message += f"; known keys: {', '.join(known)}" if known else ""
    raise ConfigError(path, message)
