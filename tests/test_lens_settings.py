"""A lens declares its own settings in its folder (settings.schema.yaml: its profile key and that
key's schema, defaults included; settings.py: their typed class, its entry's `settings`): the
config's one validation reads them beside the core's, for the built-in lenses and for one a config
adds (the tests' toy lens, named in `lenses`); a profile carries every lens's settings, parsed once
to their typed class, by its key (Profile.lens_settings); a lens says whether its settings enter the
cells' conditions (its entry's `conditions`); a top-level override reaches every lens that takes it."""

import copy
import dataclasses
import importlib
import sys

import pytest
from serverbench import REPO_ROOT
from serverbench.plan import config as cfg
from serverbench.plan import schema

pytestmark = pytest.mark.quick
LENSES = REPO_ROOT / "tests" / "lenses"


@pytest.fixture
def toy_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(LENSES))
    yield
    sys.modules.pop("toy_bytes", None)


def test_the_built_in_lenses_settings_come_from_their_folders():
    found = schema.lens_settings_schemas()
    assert set(found) == {"advise", "front", "operations", "recycle", "shutdown", "overload", "idle_pool"}
    profile = schema.load_schema()["properties"]["profiles"]["additionalProperties"]["properties"]
    assert all(profile[key] == settings for key, settings in found.items())
    core = schema.yaml.safe_load(schema.SCHEMA_PATH.read_text())
    assert not set(found) & set(core["properties"]["profiles"]["additionalProperties"]["properties"])


def test_a_lens_a_config_adds_brings_its_settings_their_default_and_their_check(base_config, toy_on_path):
    config = copy.deepcopy(base_config)
    config.update(lenses=["toy_bytes"])
    config["profiles"]["default"]["toy_bytes"] = {}
    checked = cfg.validate(config)
    assert checked["profiles"]["default"]["toy_bytes"] == {"answers": 3}  # its default, from its folder
    settings = cfg.effective_profile(checked, "default").settings("toy_bytes")
    assert type(settings).__name__ == "ToyBytesSettings" and settings.answers == 3
    wrong = copy.deepcopy(base_config)
    wrong.update(lenses=["toy_bytes"])
    wrong["profiles"]["default"]["toy_bytes"] = {"answers": 0}
    with pytest.raises(cfg.ConfigError, match=r"profiles\.default\.toy_bytes\.answers"):
        cfg.validate(wrong)


def test_without_the_lens_its_key_is_unknown(base_config):
    config = copy.deepcopy(base_config)
    config["profiles"]["default"]["toy_bytes"] = {}
    with pytest.raises(cfg.ConfigError, match="toy_bytes"):
        cfg.validate(config)


def toy_settings_class():
    return importlib.import_module("toy_bytes.settings").ToyBytesSettings


def test_a_lens_setting_given_in_a_profile_or_on_the_command_line_is_parsed_to_its_typed_class(
    base_config, toy_on_path, tmp_path
):
    """Written in the config's profile, and given on the command line as a second config file
    (`snakemake --configfile config.yaml mine.yaml`: snakemake merges it into the first)."""
    from snakemake.utils import update_config

    config = copy.deepcopy(base_config)
    config.update(lenses=["toy_bytes"])
    config["profiles"]["default"]["toy_bytes"] = {"answers": 4}
    written = cfg.effective_profile(cfg.validate(copy.deepcopy(config)), "default").settings("toy_bytes")
    assert written == toy_settings_class()(answers=4)
    mine = tmp_path / "mine.yaml"
    mine.write_text("profiles:\n  default:\n    toy_bytes: {answers: 7}\n")
    update_config(config, schema.yaml.safe_load(mine.read_text()))
    given = cfg.effective_profile(cfg.validate(config), "default")
    assert given.settings("toy_bytes") == toy_settings_class()(answers=7)
    assert dataclasses.is_dataclass(given.settings("toy_bytes"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.settings("toy_bytes").answers = 1


def lenses_profile(base_config) -> dict:
    """The default profile asking advise, recycle's capacity, shutdown and the toy lens, as written."""
    config = copy.deepcopy(base_config)
    config.update(lenses=["toy_bytes"])
    config["profiles"]["default"].update(
        advise={}, recycle={"capacity": {"settings": [{"max_requests": 10}]}}, shutdown={}, toy_bytes={}
    )
    return config


def test_a_top_level_override_reaches_every_lens_that_takes_it(base_config, toy_on_path):
    """`--config objective_p99_ms=30` (text, as snakemake hands it over) replaces the objective of
    every lens's objective search, advise's and recycle's capacity's; memory_budget_mb only
    advise's, the one lens that takes it; the toy lens, taking neither, is as written."""
    config = lenses_profile(base_config)
    config.update(objective_p99_ms="30", memory_budget_mb="256")
    profile = cfg.effective_profile(cfg.validate(config), "default")
    advise, recycle = profile.settings("advise"), profile.settings("recycle")
    assert advise.search.objective_p99_ms == recycle.capacity.search.objective_p99_ms == 30
    assert advise.memory_budget_mb == 256 and advise.memory_budget_bytes == 256 * 1024**2
    assert profile.settings("toy_bytes") == toy_settings_class()(answers=3)
    # Without the override each keeps its own default, one search's keys with each lens's defaults.
    alone = cfg.effective_profile(cfg.validate(lenses_profile(base_config)), "default")
    assert (
        alone.settings("advise").search.objective_p99_ms == alone.settings("recycle").capacity.search.objective_p99_ms
    )
    assert (
        alone.settings("advise").search.max_connections,
        alone.settings("recycle").capacity.search.max_connections,
    ) == (512, 64)


def test_the_lenses_say_whose_settings_enter_the_cells_conditions(base_config, toy_on_path, monkeypatch):
    """advise's and front's settings shape the cells' conditions, operations', recycle's, shutdown's
    and the toy's do not; the toy lens declaring they do puts them there."""
    config = cfg.validate(lenses_profile(base_config))
    conditions = cfg.effective_profile(config, "default").measuring_conditions()
    assert conditions["advise"] == config["profiles"]["default"]["advise"] and conditions["front"] is None
    assert cfg.effective_profile(config, "default").settings("shutdown").rounds == 5  # asked, its defaults
    assert not {"operations", "recycle", "shutdown", "toy_bytes"} & set(conditions)
    toy = importlib.import_module("toy_bytes")
    monkeypatch.setattr(toy, "LENS", dataclasses.replace(toy.LENS, conditions=True))
    assert cfg.effective_profile(config, "default").measuring_conditions()["toy_bytes"] == {"answers": 3}


def test_the_shipped_lenses_settings_read_back_as_validated(base_config):
    """Each shipped profile's settings of advise, front, operations, shutdown and overload, typed, write back
    the dict they were parsed from (the conditions digest hashes it)."""
    checked = set()
    for name, written in base_config["profiles"].items():
        for key in ("advise", "front", "operations", "shutdown", "overload"):
            if written.get(key):
                parsed = schema.declared_settings()[key].parse(written[key])
                assert parsed.to_dict() == written[key], (name, key)
                checked.add(key)
    assert checked == {"advise", "front", "operations", "shutdown", "overload"}
