"""The Answers open with which servers do the least work per request, per language, and how much
more each other does, from the work lens's kept default run (docs/data): its controls (the A/A
twin, the planted variant) and the ceiling, which serves no app, left out."""

import pandas as pd
import pytest
from serverbench import REPO_ROOT
from serverbench.lenses.work.report import lead_clauses

pytestmark = pytest.mark.quick
TITLES = {"python": "Python", "perl": "Perl", "none": "no app"}


def test_the_first_sentence_names_the_cheapest_server_of_each_language_and_how_much_more_the_rest_do():
    work = pd.read_csv(REPO_ROOT / "docs/data/work-default.csv")
    judged = pd.read_csv(REPO_ROOT / "docs/data/work-default-verdicts.csv")
    first = lead_clauses(judged, work, TITLES)["decided"][0]
    # By hand from work-default.csv's instructions_per_request: 58,583.85 / 53,775.03 = 1.089,
    # 243,785.0 / 53,775.03 = 4.533; 50,831.02 / 43,354.16 = 1.172, 605,856.5 / 43,354.16 = 13.974.
    assert first == (
        "The least work per request here, counted (the host's speed does not move a count): "
        "Perl: unit-perl (53,775 instructions a request), then uwsgi-psgi 1.09×, starman 4.53× its instructions; "
        "Python: unit-python (43,354 instructions a request), then uwsgi-debian 1.17×, gunicorn-gthread 13.97× "
        "its instructions."
    )
    assert "gunicorn-gthread-again" not in first and "plus5" not in first and "nginx-baseline" not in first
