"""The site policy in the workflow profiles: nothing runs beside a measurement.

Every rule whose job starts a server (or keeps every CPU busy) must hold the
machine in profiles/default and its node in profiles/slurm; a rule added
without it would run beside a cell (operations and bench_rate once did)."""

import re

import yaml
from serverbench import REPO_ROOT, registry

RULES = REPO_ROOT / "workflow" / "rules"
# Jobs that start servers, a database, or load every CPU, besides the cell rules.
MEASURING = {"environment", "database_template"}


def rules() -> dict[str, str]:
    """Each rule's (or checkpoint's) name and its text."""
    found = {}
    for path in [*RULES.glob("*.smk"), *(lens.rules for lens in registry.lenses({}) if lens.rules.is_file())]:
        text = path.read_text()
        parts = re.split(r"^(?:rule|checkpoint) (\w+):$", text, flags=re.MULTILINE)
        found.update(dict(zip(parts[1::2], parts[2::2], strict=True)))
    # The lenses' measuring and table rules, written once in lenses.smk (`rule:` named in a loop).
    measuring, table = re.split(r"^\s+rule:$", (RULES / "lenses.smk").read_text(), flags=re.MULTILINE)[1:]
    for lens in registry.lenses({}):
        if lens.measure_job:
            found[lens.measure_rule] = measuring
        if lens.table_job:
            found[lens.table_rule] = table
    return found


def starting_servers() -> set[str]:
    """Rules pinned to a cell's CPUs (threads: cell_threads) and the other measuring ones."""
    return {name for name, body in rules().items() if "threads: cell_threads" in body} | MEASURING


def resources(entries) -> dict[str, int]:
    return {key: int(value) for key, value in (entry.split("=") for entry in entries)}


def test_the_rule_list_is_read():
    assert {"bench", "bench_rate", "conformance", "work", "operations", "advise", "front"} <= starting_servers()
    assert set(starting_servers()) <= set(rules())


def test_one_job_at_a_time_here_but_two_sets_of_probes_or_the_charts_beside_a_table():
    profile = yaml.safe_load((REPO_ROOT / "profiles/default/config.yaml").read_text())
    slots = resources(profile["resources"])["bench_slot"]
    # Every job takes every slot unless the profile says otherwise, and only the probes and the charts do.
    assert resources(profile["default-resources"])["bench_slot"] == slots
    lowered = {entry.split(":")[0]: resources([entry.split(":")[1]]) for entry in profile["set-resources"]}
    assert lowered == {"conformance": {"bench_slot": slots // 2}, "charts": {"bench_slot": slots // 2}}
    # The charts may share the machine only because they read the summary, which collect
    # writes from every cell (whose jobs each wait for their server's probes).
    chart, collect = rules()["charts"], rules()["collect"]
    assert 'summary=f"{RESULTS}/summary.csv"' in chart and "cells=cell_results" in collect


def test_every_server_starting_job_has_a_node_of_its_own_on_slurm():
    profile = yaml.safe_load((REPO_ROOT / "profiles/slurm/config.yaml").read_text())
    # A local rule runs where snakemake runs (the database template), on no compute node.
    for rule in {name for name in starting_servers() if "localrule: True" not in rules()[name]}:
        held = profile["set-resources"].get(rule, {})
        assert held.get("bench_slot") == 1 and "--exclusive" in held.get("slurm_extra", ""), rule
