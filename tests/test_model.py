"""The declared shapes: records written by serverbench before the typed model
(tests/data/records-v1, the default matrix measured with the old code, its
runs.csv and summary.csv beside) read back through the new loader into the
same tables, and decided as before the stage packages (verdicts*.csv beside
them); unknown schemas are refused; a profile is exactly the schema's."""

import copy
import dataclasses
import io
import json

import pandas as pd
import pytest
import yaml
from conftest import RECORDS_V1
from serverbench import REPO_ROOT
from serverbench.decide.verdicts import read_verdicts
from serverbench.plan import config as cfg
from serverbench.plan.catalogue import ServerEntry, server_entry
from serverbench.plan.shapes import Profile
from serverbench.record import sections
from serverbench.record.model import CellRecord, RecordError, load_record
from serverbench.report.verdicts import verdict_table
from serverbench.tables import runs as run_table
from serverbench.tables import summary as summary_table
from serverbench.tables.columns import RUN_COLUMNS, SUMMARY_COLUMNS

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

STORED = RECORDS_V1
RECORDS = sorted((STORED / "cells").rglob("r*.json"))
KEYS = ["profile", "workload", "tool", "server", "concurrency"]


def test_the_stored_set_is_the_quick_matrix():
    """Measured when it was the default profile: since renamed `quick`."""
    config = cfg.load(REPO_ROOT / "config.yaml")
    default = config["profiles"]["quick"]
    cells = len(default["servers"]) * len(default["tools"]) * len(default["concurrency"]) * default["repeats"]
    assert len(RECORDS) == cells == 48


def test_old_records_give_the_same_runs_table():
    old = pd.read_csv(STORED / "runs.csv")
    # Through CSV, as runs.csv is written and read.
    new = pd.read_csv(io.StringIO(run_table.load_runs(RECORDS).to_csv(index=False)))
    assert list(new.columns) == list(old.columns) == RUN_COLUMNS
    key = [*KEYS, "repeat"]
    old, new = old.set_index(key).sort_index(), new.set_index(key).sort_index()
    assert list(new.index) == list(old.index)
    assert (new["status"] == old["status"]).all()
    assert (new["flags"].fillna("") == old["flags"].fillna("")).all()
    same = [c for c in RUN_COLUMNS if c not in (*key, "result")]
    pd.testing.assert_frame_equal(new[same], old[same], check_dtype=False)


def test_old_records_give_the_same_summary():
    old = pd.read_csv(STORED / "summary.csv")
    runs = run_table.load_runs(RECORDS)
    new = summary_table.summarise(runs, cfg.load(REPO_ROOT / "config.yaml")["flags"])
    # Every column of then, in the same order, among today's (which add confidence intervals).
    assert list(new.columns) == SUMMARY_COLUMNS
    assert [c for c in SUMMARY_COLUMNS if c in set(old.columns)] == list(old.columns)
    old, new = old.set_index(KEYS).sort_index(), new.set_index(KEYS).sort_index()
    assert (new["status"] == old["status"]).all()
    # With 3 repeats nothing is trimmed now (2 must remain for the spread), so the
    # CV, and with it `unstable`, are what they were; the trimmed mean of 3 is now
    # their mean, no longer their median.
    assert list(new["flags"].fillna("")) == list(old["flags"].fillna(""))
    assert new["rps_cv"].tolist() == pytest.approx(old["rps_cv"].tolist())
    assert new["rps_median"].tolist() == pytest.approx(old["rps_median"].tolist())
    means = runs[runs["status"] == "ok"].groupby(KEYS)["rps"].mean().sort_index()
    assert new["rps_trimmed_mean"].tolist() == pytest.approx(means.tolist())


def pruned(value):
    """A JSON value without its nulls and empty objects and lists (fields the model declares and the old
    record lacked)."""
    if isinstance(value, dict):
        kept = {key: pruned(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item is not None and item != {} and item != []}
    return value


def test_a_record_reads_back_to_the_same_json():
    for path in RECORDS:
        data = json.loads(path.read_text())
        assert pruned(load_record(path).to_dict()) == pruned(data)


def test_unknown_schema_is_refused(tmp_path):
    data = json.loads(RECORDS[0].read_text())
    data["schema"] = "serverbench.cell/99"
    path = tmp_path / "r1.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=r"r1.json: unknown record schema 'serverbench.cell/99'"):
        load_record(path)
    with pytest.raises(RecordError, match="unknown record schema None"):
        CellRecord.from_dict({k: v for k, v in data.items() if k != "schema"})


def test_unknown_field_is_refused():
    data = json.loads(RECORDS[0].read_text())
    data["client"]["invented"] = 1
    with pytest.raises(RecordError, match="ClientSection has no field"):
        CellRecord.from_dict(data)


def test_profile_fields_are_the_schemas():
    """The core's profile keys are Profile's fields; every lens's settings (its folder's
    settings.schema.yaml) go in lens_settings, by its profile key."""
    from serverbench.plan.schema import lens_settings_schemas, load_schema

    declared = set(load_schema()["properties"]["profiles"]["additionalProperties"]["properties"])
    fields = set(Profile.__dataclass_fields__) - {"name", "scaling", "lens_settings", "lens_conditions"}
    # `apps` makes a profile per app when the config is validated (plan.apps.expand_app_profiles).
    assert fields == declared - {"apps"} - set(lens_settings_schemas())


def test_a_server_entrys_fields_are_the_catalogues_schema():
    """The typed catalogue entry declares every key of catalogue.schema.yaml, with its defaults."""
    schema = yaml.safe_load((REPO_ROOT / "workflow/schemas/catalogue.schema.yaml").read_text())
    declared = schema["additionalProperties"]["properties"]
    fields = {f.name: f for f in dataclasses.fields(ServerEntry)}
    assert set(fields) - {"name"} == set(declared)
    for key, spec in declared.items():
        if "default" in spec:
            assert fields[key].default == spec["default"], key
    config = cfg.load(REPO_ROOT / "config.yaml")
    for name in config["catalogue"]:  # every shipped entry reads as a typed one
        entry = server_entry(config, name)
        assert entry.name == name and entry.command and entry.language in config["languages"]


def test_profile_defaults_come_from_the_schema():
    config = cfg.read(REPO_ROOT / "config.yaml")
    left_out = ("network", "idle_after", "study")
    config["profiles"]["bare"] = {k: v for k, v in config["profiles"]["default"].items() if k not in left_out}
    config["profile"] = "bare"
    profile = cfg.effective_profile(cfg.validate(config), "bare")
    assert (profile.network, profile.idle_after, profile.study, profile.isolation) == ("loopback", 0, None, "cgroup")
    assert profile.workloads == ["hello"]


def stored_tables(config: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """runs.csv and summary.csv of the stored records, through CSV as the workflow writes and reads them."""
    runs = run_table.load_runs(RECORDS)
    spec = config["comparisons"]
    summary = summary_table.summarise(runs, config["flags"], spec["confidence"], config["seed"])
    return tuple(pd.read_csv(io.StringIO(frame.to_csv(index=False))) for frame in (runs, summary))


DECIDED = ["kind", *KEYS[:3], "concurrency", "a", "b", "outcome"]
FIGURES = [
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "margin",
    "detectable_ratio",
]


@pytest.mark.parametrize(
    ("stored", "excluded"),
    [("verdicts.csv", None), ("verdicts-no-excluded-flags.csv", [])],
)
def test_old_records_give_the_same_verdicts(stored, excluded):
    """verdicts.csv of the stored records as decided when the statistics last changed on purpose (the rounds
    model, issue 27; the 2% margin, issue 44; starved pairs compared on fairness, issue 45; stored beside them):
    the same comparisons, outcomes and figures,
    with the run's comparisons and with every cell comparable. A refactoring must leave them as they are."""
    config = cfg.load(REPO_ROOT / "config.yaml")
    if excluded is not None:
        config["comparisons"]["not_comparable_flags"] = excluded
    old = read_verdicts(STORED / stored)  # written when the outcome's column was `verdict`
    new = pd.read_csv(io.StringIO(verdict_table(*stored_tables(config), config).to_csv(index=False)))
    # One column added since (issue 68): the reasons one by one, so no reader splits ``why``.
    assert list(new.columns) == [*old.columns, "reasons"]
    joined = ["; ".join(json.loads(texts)) if isinstance(texts, str) else "" for texts in new["reasons"]]
    assert joined == new["why"].fillna("").tolist()
    pd.testing.assert_frame_equal(new[DECIDED], old[DECIDED])
    pd.testing.assert_frame_equal(new[FIGURES], old[FIGURES], check_dtype=False)
    assert new["why"].fillna("").tolist() == old["why"].fillna("").tolist()
    assert new["reason_codes"].fillna("").tolist() == old["reason_codes"].fillna("").tolist()


def test_renamed_languages_give_the_same_verdicts():
    """Languages are the catalogue's: renamed in config (and so in the records' rows), every verdict stands."""
    config = cfg.load(REPO_ROOT / "config.yaml")
    names = {"python": "snake", "perl": "camel"}
    renamed = copy.deepcopy(config)
    renamed["languages"] = {names.get(key, key): value for key, value in config["languages"].items()}
    for server in renamed["catalogue"].values():
        server["language"] = names.get(server["language"], server["language"])
    tables = [frame.assign(language=frame["language"].replace(names)) for frame in stored_tables(config)]
    old = verdict_table(*stored_tables(config), config)
    new = verdict_table(*tables, renamed)
    assert len(new) == len(old) > 0
    pd.testing.assert_frame_equal(new[DECIDED], old[DECIDED])
    assert set(new["language_a"].dropna()) <= {"snake", "camel"}


def test_a_record_is_frozen_and_every_section_typed():
    """A record is assembled once and frozen; its sections are declared types, not dicts read by key."""
    record = load_record(next(path for path in RECORDS if "/uwsgi/c10/" in str(path)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.status = "failed"
    untyped = [item.name for item in dataclasses.fields(record) if type(getattr(record, item.name)) is dict]
    assert untyped == ["timing"]  # phase → epoch seconds: a mapping, not a section
    assert isinstance(record.isolation, sections.IsolationSection) and record.isolation.server_cpus == [0]
    assert isinstance(record.order, sections.Order) and isinstance(record.raw, sections.Raw)


def test_keys_a_section_no_longer_declares_are_kept():
    """An older record's key that a typed section does not declare reads back, and is written again."""
    data = json.loads(RECORDS[0].read_text())
    data["isolation"]["from_an_older_version"] = 1
    record = CellRecord.from_dict(data)
    assert record.isolation.extra == {"from_an_older_version": 1}
    assert record.to_dict()["isolation"]["from_an_older_version"] == 1
