"""`serverbench plan` on a fresh clone: with no earlier run here, the kinds of job it cannot time
(a lens's jobs, the probes) are given what the profile's recorded whole run spent beyond the
cells (docs/data/profile-times.yaml), and the cells what the recorded run's cells spent beside
their load; so every recorded profile is planned within a quarter of its recorded time, as
written or shortened as it was recorded. A plan that differs from the recorded run (a config of
one's own, other overrides) is not given it."""

from __future__ import annotations

import argparse

import pytest
from serverbench import REPO_ROOT
from serverbench.drive import docsfigures, preview

pytestmark = pytest.mark.quick


def planned(tmp_path, profile: str, overrides: list[str], configfile: list | None = None) -> dict:
    args = argparse.Namespace(
        profile=profile, overrides=overrides, configfile=configfile or [], config=REPO_ROOT / "config.yaml"
    )
    config = preview.load(args.config, args.configfile, profile, overrides)
    return preview.preview(config, tmp_path / "no-earlier-run", preview.recorded_as_planned(args))


RECORDED = {
    name: found
    for name, found in docsfigures.profile_times().items()
    if not found.get("estimated")
    and name in docsfigures.yaml.safe_load((REPO_ROOT / "config.yaml").read_text())["profiles"]
}


@pytest.mark.parametrize("profile", sorted(RECORDED))
def test_every_recorded_profile_is_planned_within_a_quarter_of_its_recorded_time(tmp_path, profile):
    recorded = RECORDED[profile]
    plan = planned(tmp_path, profile, list(recorded.get("shortened") or []))
    assert plan["unknown"] == [], plan["jobs"]
    ratio = plan["estimated_s"] / recorded["seconds"]
    assert 0.75 <= ratio <= 1.25, (profile, plan["estimated_s"], recorded["seconds"], plan["jobs"])


def test_a_lens_whose_jobs_no_run_here_timed_is_given_the_recorded_runs_time(tmp_path):
    plan = planned(tmp_path, "advise", [])
    lens = next(job for job in plan["jobs"] if job["name"] == "advise lens")
    assert lens["seconds_each"] > 0 and lens["source"].startswith("the recorded run of advise (8 min 40 s")
    assert plan["estimated_s"] == pytest.approx(RECORDED["advise"]["seconds"])


def test_a_plan_unlike_the_recorded_run_is_not_given_its_time(tmp_path):
    shortened = planned(tmp_path, "advise", ["duration=1"])
    assert "advise lens" in shortened["unknown"]
    unshortened = planned(tmp_path, "high", [])  # recorded only as shortened with duration=10
    assert unshortened["estimated_s"] > 2 * RECORDED["high"]["seconds"]


def test_a_shortened_record_says_so_where_its_time_is_said():
    assert docsfigures.profile_time_said("high") == "about 6 min here, shortened with duration=10"
    assert docsfigures.profile_time_said("default") == "about 10 min here"
