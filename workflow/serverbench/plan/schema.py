"""The config's schema: config.schema.yaml, the catalogue's own schema in its place and each
lens's settings (its folder's ``settings.schema.yaml``) in a profile's, the objective search's
fragment where a lens places it; checked with the
schema's defaults written in (the one place defaults live), every error naming its key path."""

from __future__ import annotations

import copy
import functools
import importlib.util
from pathlib import Path

import yaml

from serverbench import REPO_ROOT
from serverbench.plan import objective
from serverbench.plan.shapes import LensDeclared

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


def _lens_folders(packages) -> list[tuple[str, Path]]:
    """The built-in lenses' packages and folders, then those of the packages config ``lenses``
    names (found, not imported)."""
    built_in = sorted(path for path in LENS_FOLDERS.iterdir() if (path / "__init__.py").is_file())
    folders = [(f"serverbench.lenses.{path.name}", path) for path in built_in]
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        folders += [(name, Path(location)) for location in (spec.submodule_search_locations or [])] if spec else []
    return folders


def lens_settings_schemas(packages=()) -> dict[str, dict]:
    """Each lens's own settings, as its folder declares them (``settings.schema.yaml``: the
    profile key that asks for it and that key's schema), by profile key: read as files, so the
    schema names no lens. ``packages``: the lenses a config adds (its ``lenses``)."""
    return {key: copy.deepcopy(schema) for key, (_, schema) in _declared_schemas(tuple(packages)).items()}


def _declared_schemas(packages: tuple) -> dict[str, tuple[str, dict]]:
    """Each lens folder's settings schema by profile key, with its lens's package."""
    found = {}
    for package, folder in _lens_folders(packages):
        path = folder / LENS_SETTINGS_SCHEMA
        if path.is_file():
            key, schema = _read_declared(path)
            found[key] = (package, schema)
    return found


@functools.cache
def _read_declared(path: Path) -> tuple[str, dict]:
    declared = yaml.safe_load(path.read_text())
    return declared["profile_key"], _with_objective_search(declared["schema"], path)


def declared_settings(packages=()) -> dict[str, LensDeclared]:
    """What each lens that declares settings says of them, by profile key: its entry's typed
    class and whether they shape the timed cells (``Lens.settings``, ``Lens.conditions``). The
    plan reads these two fields of the entry of a lens whose folder declares settings, and no
    other lens code (a lens's settings class is a frozen dataclass of its folder's settings.py)."""
    found = {}
    for key, (package, _) in _declared_schemas(tuple(packages)).items():
        entry = importlib.import_module(package).LENS
        found[key] = LensDeclared(entry.settings, entry.conditions)
    return found


def _with_objective_search(schema, where: Path):
    """A lens's schema with the objective search's one fragment (plan.objective) put where it
    writes ``objective_search: {KEY: default}``: the fragment's properties beside the object's
    own, with the lens's defaults where it gives them."""
    if isinstance(schema, list):
        return [_with_objective_search(item, where) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _with_objective_search(value, where) for key, value in schema.items() if key != objective.KEYWORD}
    if objective.KEYWORD in schema:
        placed = copy.deepcopy(_objective_search_properties())
        for key, default in (schema[objective.KEYWORD] or {}).items():
            if key not in placed:
                raise ConfigError("schema", f"{where}: {key!r} is no key of the objective search")
            placed[key]["default"] = default
        out["properties"] = {**placed, **out.get("properties", {})}
    return out


@functools.cache
def _objective_search_properties() -> dict:
    return yaml.safe_load(objective.SCHEMA_PATH.read_text())["properties"]


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
