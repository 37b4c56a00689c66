"""Work per request: instructions, syscalls and context switches each server spends on a
request, counted rather than timed (docs/work.md)."""

from pathlib import Path

from serverbench.lens import (
    Check,
    ForestPanel,
    Inputs,
    Layout,
    Lens,
    MeasureJob,
    Place,
    RunComparison,
    Section,
    TableJob,
    deferred,
)
from serverbench.record.vocabulary import Outcome

(work_section,) = deferred(f"{__name__}.report", "work_section")
has_work, compare_work, exit_status = deferred(f"{__name__}.compare", "has_work", "compare_work", "exit_status")

# Two servers' counts are the same within this config key's margin (front compares on them too).
MARGIN_KEY = "work_lens.margin"
# What it offers to releases and bisect: a release is judged on instructions (work_verdicts.csv),
# shown its syscalls.
CHECKS = (
    Check(
        "instructions_per_request",
        "instructions / request",
        "work.csv",
        Layout.COLUMN,
        unit="instructions",
        verdicts="work_verdicts.csv",
        change="instructions per request",
        estimate="ratio",
        figure="{value:,.0f}",
        ratio_digits=4,
        margin_key=MARGIN_KEY,
    ),
    Check(
        "syscalls_per_request",
        "syscalls / request",
        "work.csv",
        Layout.COLUMN,
        unit="syscalls",
        margin_key=MARGIN_KEY,
    ),
)


# Its comparisons below the timed ones in the forest (short title lines: a title is as wide as its
# longest line, whatever the plot's width).
FOREST = ForestPanel(
    table="work_verdicts.csv",
    title=("Work per request (counted, not timed):", "its ratio and interval"),
    axis="instructions per request, ratio A / B (log)",
    outcomes=(Outcome.MORE_WORK, Outcome.LESS_WORK, Outcome.EQUIVALENT, Outcome.UNDETERMINED),
    colours=("#b2182b", "#1b7837", "#2166ac", "#888888"),
    margin=lambda config: config["work_lens"]["margin"],
)


def _jobs(config, matrix) -> list[str]:
    """A job per (profile, workload, server) the profiles' `work` asks for."""
    triples = {
        (cell.profile, cell.workload, cell.server)
        for cell in matrix.cells
        if matrix.profiles[cell.profile].counts_work(cell.workload)
    }
    return [f"work/{profile}/{workload}/{server}.json" for profile, workload, server in sorted(triples)]


def _section(tables: dict, inputs: Inputs) -> Section | None:
    if "work_verdicts.csv" not in tables:
        return None  # a run that counted work but did not judge it (its targets stop at work.csv)
    return work_section(
        tables["work.csv"],
        tables["work_detail.csv"],
        tables["work_verdicts.csv"],
        margin=inputs.config["work_lens"]["margin"],
        titles=inputs.language_titles,
    )


# What `serverbench compare --metric work` reads: each server's instructions per request in two
# runs' work.csv, B against A.
BETWEEN_RUNS = RunComparison(
    metric="work",
    table="work.csv",
    figure="work per request",
    title="Work per request (user-space instructions), change B/A:",
    present=has_work,
    compare=compare_work,
    exit_status=exit_status,
)

LENS = Lens(
    name="work",
    question="How much work does each server do per request, counted rather than timed?",
    folder=Path(__file__).parent,
    profile_key="work",
    place=Place.AFTER,
    jobs=_jobs,
    tables=("work.csv", "work_detail.csv", "work_verdicts.csv"),
    outputs=("work_counted.txt",),
    section=_section,
    before_rounds=True,
    checks=CHECKS,
    forest=FOREST,
    between_runs=BETWEEN_RUNS,
    # Its counts do not depend on the machine's speed, but its CPU use would disturb a timed cell beside it.
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_work",
        record="work/{profile}/{workload}/{server}.json",
        message="counting the work {wildcards.server} does per request (profile {wildcards.profile})",
        # Each life's raw outputs (h2load's, perf's, callgrind's gzipped), named in the record.
        raw="work/{profile}/{workload}/{server}.raw",
    ),
    # Its verdicts (work_verdicts.csv) and its first answer (work_counted.txt): its own rules.smk.
    table_job=TableJob(
        entry=f"{__name__}.scripts.work_table:write_tables",
        outputs={"work": "work.csv", "detail": "work_detail.csv"},
        early=True,
    ),
)
