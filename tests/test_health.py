"""The block at the end of a run (serverbench.report.health): what failed or was skipped and why,
the controls that misbehaved, and ``strict`` setting the exit status; on planted tables (the
real run's exit status is tests/test_faults.py's)."""

import pandas as pd
import pytest
from serverbench import REPO_ROOT
from serverbench.plan import config as cfg
from serverbench.report.health import StrictFailure, Trouble, print_health, run_problems

pytestmark = pytest.mark.quick
CELL = {"profile": "default", "workload": "hello", "tool": "wrk", "concurrency": 10}


def planted(tmp_path, statuses: dict, outcomes: list[tuple]):
    pd.DataFrame(
        [
            {**CELL, "server": server, "status": status, "reason": reason}
            for server, (status, reason) in statuses.items()
        ]
    ).to_csv(tmp_path / "summary.csv", index=False)
    rows = [{**CELL, "kind": kind, "metric": "speed", "a": a, "b": b, "outcome": outcome, "ratio": ratio}
            for kind, a, b, outcome, ratio in outcomes]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "verdicts.csv", index=False)
    return cfg.load(REPO_ROOT / "config.yaml")


def test_failed_and_skipped_cells_and_misbehaving_controls_are_named(tmp_path, capsys):
    config = planted(
        tmp_path,
        {"gunicorn": ("ok", None), "broken": ("failed", "exited with code 4"), "unit-python": ("skipped", "no unitd")},
        [
            ("A/A", "gunicorn-gthread-again", "gunicorn-gthread", "faster", 1.071),
            ("variant", "gunicorn-gthread-plus5", "gunicorn-gthread", "equivalent", 0.98),  # said the other way
            ("variant", "gunicorn-gthread-plus3", "gunicorn-gthread", "undetermined", 0.99),  # too small: said
            ("variant", "gunicorn-gthread-plus10", "gunicorn-gthread", "slower", 0.91),  # seen: fine
            ("variant", "uwsgi-chain", "uwsgi", "equivalent", 1.0),  # not planted: no expectation
        ],
    )
    problems = run_problems(config, tmp_path)
    assert [(p.trouble, p.subject.split(" ")[0]) for p in problems] == [
        (Trouble.FAILED, "broken"),
        (Trouble.SKIPPED, "unit-python"),
        (Trouble.AA_DECIDED, "gunicorn-gthread-again"),
        (Trouble.VARIANT_NOT_SEEN, "gunicorn-gthread-plus5"),
    ]
    print_health(config, tmp_path)  # not strict: said, no exception
    said = capsys.readouterr().out
    assert "4 thing(s) to look at" in said and "exited with code 4" in said and "equivalent, planted slower" in said
    assert "gunicorn-gthread-plus3 against gunicorn-gthread (default, c=10, on speed): undetermined — too small" in said
    with pytest.raises(StrictFailure, match="strict: 1 failed, 1 skipped, 1 A/A control told apart, 1 planted"):
        print_health({**config, "strict": True}, tmp_path)


def test_a_clean_run_says_so_and_passes_strict(tmp_path, capsys):
    config = planted(
        tmp_path,
        {"gunicorn": ("ok", None)},
        [("A/A", "gunicorn-gthread-again", "gunicorn-gthread", "equivalent", 1.0)],
    )
    print_health({**config, "strict": True}, tmp_path)
    assert "every cell measured, every control as expected" in capsys.readouterr().out


@pytest.mark.parametrize(("outcome", "ratio"), [("faster", 1.071), ("slower", 0.934)])
def test_an_aa_control_told_apart_either_way_is_a_trouble_and_fails_strict(tmp_path, outcome, ratio):
    """The same server twice may come out neither faster nor slower: each way is named, with its ratio."""
    config = planted(tmp_path, {"gunicorn": ("ok", None)},
                     [("A/A", "gunicorn-gthread-again", "gunicorn-gthread", outcome, ratio)])  # fmt: skip
    problems = run_problems(config, tmp_path)
    assert [(p.trouble, p.why) for p in problems] == [(Trouble.AA_DECIDED, f"{outcome} (ratio {ratio})")]
    with pytest.raises(StrictFailure, match="1 A/A control told apart"):
        print_health({**config, "strict": True}, tmp_path)


@pytest.mark.parametrize(("outcome", "ratio"), [("equivalent", 1.004), ("undetermined", 1.018)])
def test_an_aa_control_not_told_apart_is_no_trouble(tmp_path, capsys, outcome, ratio):
    """Equivalent is what an A/A pair should show; undetermined is the run's resolution, not a fault."""
    config = planted(tmp_path, {"gunicorn": ("ok", None)},
                     [("A/A", "gunicorn-gthread-again", "gunicorn-gthread", outcome, ratio)])  # fmt: skip
    assert run_problems(config, tmp_path) == []
    print_health({**config, "strict": True}, tmp_path)  # no StrictFailure
    assert "every cell measured, every control as expected" in capsys.readouterr().out
