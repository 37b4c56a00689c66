"""The run's check on itself holds on every run: the planted 5% variant is counted by the work
lens (its instructions per request: more work, whatever the host's speed), while speed that cannot
tell 5% says so in words and never fails a strict run; a planted variant called the other way, or
not seen on work, is a trouble. On planted tables, as test_health's."""

import pandas as pd
import pytest
from serverbench import REPO_ROOT
from serverbench.plan import config as cfg
from serverbench.report.health import StrictFailure, Trouble, print_health, run_problems

pytestmark = pytest.mark.quick
PAIR = {"profile": "default", "workload": "hello", "kind": "variant", "a": "gunicorn-gthread-plus5",
        "b": "gunicorn-gthread"}  # fmt: skip


def planted(tmp_path, speed: str, work: str | None):
    """A clean summary, the variant on speed in verdicts.csv, and on work in work_verdicts.csv."""
    pd.DataFrame([{"profile": "default", "workload": "hello", "tool": "wrk", "concurrency": 2,
                   "server": "gunicorn-gthread", "status": "ok", "reason": None}]).to_csv(
        tmp_path / "summary.csv", index=False)  # fmt: skip
    speed_row = {**PAIR, "tool": "wrk", "concurrency": 2, "metric": "speed", "outcome": speed, "ratio": 0.97,
                 "detectable_ratio": 1.056}  # fmt: skip
    pd.DataFrame([speed_row]).to_csv(tmp_path / "verdicts.csv", index=False)
    lens_tables = []
    if work is not None:
        work_row = {**PAIR, "metric": "work", "outcome": work, "ratio": 1.0409, "detectable_ratio": 1.006}
        pd.DataFrame([work_row]).to_csv(tmp_path / "work_verdicts.csv", index=False)
        lens_tables = [tmp_path / "work_verdicts.csv"]
    return cfg.load(REPO_ROOT / "config.yaml"), lens_tables


def test_speed_too_coarse_for_5_percent_is_said_and_passes_strict_when_work_counts_it(tmp_path, capsys):
    config, lens_tables = planted(tmp_path, "undetermined", "more work")
    assert run_problems(config, tmp_path, lens_tables) == []
    print_health({**config, "strict": True}, tmp_path, lens_tables)  # no StrictFailure
    said = capsys.readouterr().out
    assert "(default, hello, on work): more work (1.041×), as planted" in said, said
    assert "(default, c=2, on speed): undetermined — too small for this run's speed to tell" in said
    assert "could have told 1.056× apart" in said and "every control as expected" in said


@pytest.mark.parametrize(
    ("speed", "work", "wrong"),
    [
        ("faster", "more work", "faster, planted slower"),
        ("equivalent", "more work", "equivalent, planted slower"),
        ("slower", "equivalent", "equivalent, planted more work"),
        ("undetermined", "undetermined", "undetermined, planted more work"),
        ("undetermined", "less work", "less work, planted more work"),
    ],
)
def test_a_planted_variant_called_otherwise_fails_strict(tmp_path, speed, work, wrong):
    config, lens_tables = planted(tmp_path, speed, work)
    problems = run_problems(config, tmp_path, lens_tables)
    assert [(p.trouble, p.why) for p in problems] == [(Trouble.VARIANT_NOT_SEEN, wrong)]
    with pytest.raises(StrictFailure, match="1 planted variant not seen"):
        print_health({**config, "strict": True}, tmp_path, lens_tables)


def test_without_the_work_lens_speed_alone_is_judged(tmp_path):
    config, lens_tables = planted(tmp_path, "undetermined", None)
    assert run_problems(config, tmp_path, lens_tables) == []
    config, lens_tables = planted(tmp_path, "slower", None)
    assert run_problems(config, tmp_path, lens_tables) == []
