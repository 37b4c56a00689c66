# The work lens: what each server does per request, counted rather than timed
# (serverbench.lenses.work.measure). One job per (profile, server, workload) of a profile
# with `work: true`, before that profile's cells: it starts the server as its
# cells would, under valgrind and then perf trace, and writes one record. A
# server that cannot be counted is a recorded reason, never a failed job.


rule work:
    input:
        # The cluster each life copies and starts for its app (PostgreSQL only).
        database=cell_database,
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        record=f"{RESULTS}/work/{{profile}}/{{workload}}/{{server}}.json",
        # Each life's raw outputs (h2load's, perf's, callgrind's gzipped), named in the record.
        raw=directory(f"{RESULTS}/work/{{profile}}/{{workload}}/{{server}}.raw"),
    log:
        f"{RESULTS}/logs/work/{{profile}}/{{workload}}/{{server}}.log",
    # After the steadiness check and the probes, before every cell (its counts do not
    # depend on the machine's speed, but its CPU use would disturb a timed cell beside it).
    priority: len(MATRIX.order) + 1
    conda:
        "../../../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    message:
        "counting the work {wildcards.server} does per request (profile {wildcards.profile})"
    script:
        "scripts/work.py"


# Every server's work side by side: results/work.csv (a row per server and
# workload) and results/work_detail.csv (per request by object, class of
# object, kind of process and syscall: a row each).
rule work_table:
    input:
        LENS_RESULTS["work"],
    output:
        work=report(f"{RESULTS}/work.csv", category="Tables"),
        detail=report(f"{RESULTS}/work_detail.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/work_table.log",
    # As soon as the work jobs are done, before any cell still waiting (the first answer reads it).
    priority: len(MATRIX.order) + 4
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/work_table.py"


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
