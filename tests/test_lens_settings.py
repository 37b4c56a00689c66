"""A lens declares its own settings in its folder (settings.schema.yaml: its profile key and that
key's schema, defaults included): the config's one validation reads them beside the core's, for the
built-in lenses and for one a config adds (the tests' toy lens, named in `lenses`), and a profile
carries a new lens's settings by its key (Profile.lens_settings) without a field of the core's."""

import copy
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
    assert set(found) == {"advise", "front", "operations", "recycle", "shutdown"}
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
    assert cfg.effective_profile(checked, "default").lens_settings["toy_bytes"] == {"answers": 3}
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
