"""The deployment decided on every lens (lenses/deploy): planted lens tables, in their declared
shapes, in a results directory; the answer read through the registry's findings."""

from __future__ import annotations

import pandas as pd
import pytest
from serverbench import registry
from serverbench.lenses.deploy.decide import write_tables
from serverbench.lenses.deploy.report import deploy_section
from serverbench.report.section import section_console

pytestmark = pytest.mark.quick


def _advice(server: str, capacity: float, missed: float, memory: float, verdict="recommended", failed=0) -> dict:
    return {
        "profile": "advise",
        "server": server,
        "language": "python",
        "verdict": verdict,
        "reason": None,
        "model": server,
        "workers": 2,
        "threads": 1,
        "capacity_rps": capacity,
        "capacity_missed_rps": missed,
        "memory_mb": memory,
        "gain": 1.0,
        "reload_failed": failed,
        "objective_p99_ms": 50.0,
        "points": 3,
    }


def _plant(results, operations_failed: float | None):
    """advise ranks uwsgi (9,000 req/s) above gunicorn-gthread (6,000); operations, where planted,
    saw uwsgi fail ``operations_failed`` requests per reload and gthread none."""
    advice = [_advice("uwsgi", 9000.0, 9500.0, 20.0), _advice("gunicorn-gthread", 6000.0, 6400.0, 30.0)]
    pd.DataFrame(advice).to_csv(results / "advice_recommendations.csv", index=False)
    folder = results / "advice" / "configurations" / "uwsgi"
    folder.mkdir(parents=True)
    (folder / "uwsgi.ini").write_text("[uwsgi]\nprocesses = 2\n")
    if operations_failed is not None:
        rows = [
            {
                "profile": "operations",
                "server": server,
                "language": "python",
                "check": "reload_failed",
                "value": value,
                "unit": "requests",
                "n": 15,
                "status": "ok",
                "reason": None,
            }
            for server, value in (("uwsgi", operations_failed), ("gunicorn-gthread", 0.0))
        ]
        pd.DataFrame(rows).to_csv(results / "operations.csv", index=False)


def _answer(config, results) -> pd.DataFrame:
    table = write_tables(registry.findings(config, results), results, results / "deploy.csv", results / "deploy")
    return table.astype(object).where(table.notna(), None)


def _server(table) -> dict:
    return table[(table["role"] == "recommended") & (table["choice"] == "server")].iloc[0].to_dict()


def test_a_lens_ruling_out_the_capacity_winner_changes_the_answer_and_names_it(base_config, tmp_path):
    _plant(tmp_path, operations_failed=2.0)
    table = _answer(base_config, tmp_path)
    assert _server(table)["value"] == "gunicorn-gthread"
    ruled = table[table["role"] == "ruled out"].iloc[0]
    assert (ruled["value"], ruled["lens"], ruled["figure"], ruled["table"]) == (
        "uwsgi 2×1",
        "operations",
        2.0,
        "operations.csv",
    )
    said = section_console(deploy_section(tmp_path / "deploy.csv"))
    assert (
        "Deploy gunicorn-gthread 2×1" in said and "operations rules out uwsgi 2×1 (2 requests failed per reload" in said
    )
    # Its configuration is not the winner's: advise wrote none for gthread, so none is copied.
    assert not (tmp_path / "deploy" / "python" / "uwsgi.ini").exists()


def test_nothing_ruling_it_out_keeps_the_capacity_winner_with_its_runner_up(base_config, tmp_path):
    _plant(tmp_path, operations_failed=0.0)
    table = _answer(base_config, tmp_path)
    server = _server(table)
    assert (server["value"], server["lens"], server["figure"]) == ("uwsgi", "advise", 9000.0)
    assert (server["runner_up"], server["versus"], server["fails_at"]) == ("gunicorn-gthread 2×1", "told apart", 9500.0)
    assert "ruled out" not in set(table["role"])
    assert (tmp_path / "deploy" / "python" / "uwsgi.ini").read_text().startswith("[uwsgi]")
    said = section_console(deploy_section(tmp_path / "deploy.csv"))
    assert "Deploy uwsgi 2×1 for python because" in said and "It would fail at 9,500 req/s" in said


def test_a_lens_that_did_not_run_leaves_its_choice_not_measured_and_names_its_profile(base_config, tmp_path):
    _plant(tmp_path, operations_failed=None)
    table = _answer(base_config, tmp_path)
    assert _server(table)["value"] == "uwsgi"
    mine = table[table["role"] == "recommended"].set_index("choice")
    for choice, lens in (("front", "front"), ("drain", "shutdown"), ("recycling", "recycle")):
        assert (mine.loc[choice, "ruling"], mine.loc[choice, "lens"]) == ("not measured", lens)
        assert mine.loc[choice, "profile"] == lens
        assert (
            mine.loc[choice, "sentence"] == f"not measured in this run: the {lens} lens decides it (run profile {lens})"
        )
    # No lens declares the listen backlog yet (overload's, being rewritten, will): said so.
    assert (
        mine.loc["listen backlog", "profile"] is None and "no lens declares" in mine.loc["listen backlog", "sentence"]
    )


def test_a_run_with_nothing_left_to_deploy_is_said_on_the_console(tmp_path):
    """A deploy.csv whose one row has no language (nothing left: a lens the answer needs did not
    run) is written on every medium; its empty language once reached the console as NaN."""
    import pandas as pd
    from serverbench.lenses.deploy.report import deploy_section
    from serverbench.report.section import section_console

    table = tmp_path / "deploy.csv"
    pd.DataFrame([{"language": None, "role": "none left", "choice": "server", "value": None,
                   "ruling": "not measured", "lens": "operations", "figure": None, "unit": None,
                   "table": None, "row": None, "sentence": "not measured in this run: the operations lens decides it",
                   "runner_up": None, "versus": None, "fails_at": None, "profile": "operations"}]).to_csv(
        table, index=False)  # fmt: skip
    said = section_console(deploy_section(table))
    assert "Any language: nothing to deploy: not measured in this run" in said, said
