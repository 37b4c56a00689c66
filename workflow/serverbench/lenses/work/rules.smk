# The work lens's own rules: its measuring jobs (serverbench.lenses.work.measure: one per
# (profile, server, workload) of a profile with `work: true`, before that profile's cells) and
# its table job (work.csv, work_detail.csv) are wired by the core from its LENS.


# The first answer a run gives: the work comparisons from the counts alone, printed and kept
# (results/work_counted.txt) as soon as work.csv is made, minutes before the rounds end.
rule work_counted:
    input:
        f"{RESULTS}/work.csv",
    output:
        f"{RESULTS}/work_counted.txt",
    log:
        f"{RESULTS}/logs/work_counted.log",
    priority: len(MATRIX.order) + 4
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/work_counted.py"


# The declared pairs judged on work (serverbench.lenses.work.decide): more work, less
# work, equivalent or undetermined, read against `work_lens.margin`, with the
# timed lens's comparison of the same pair beside each (do they agree?).
rule decide_work:
    input:
        work=f"{RESULTS}/work.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
    output:
        report(f"{RESULTS}/work_verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/decide_work.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/decide_work.py"
