# Workers that restart (serverbench.lenses.recycle.measure): one job per (profile,
# server) of a profile with `recycle`, before that profile's cells. It serves the
# leaking workload under a closed loop at the server's own recycling and at each
# set limit, sampling its process tree; a server that cannot start is a finding in
# its result, never a failed job.


rule recycle:
    input:
        database=cell_database,
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        f"{RESULTS}/recycle/{{profile}}/{{server}}.json",
    log:
        f"{RESULTS}/logs/recycle/{{profile}}/{{server}}.log",
    # Before every cell: its load and restarts would disturb a timed cell beside it.
    priority: len(MATRIX.order) + 1
    conda:
        "../../../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    message:
        "restarting {wildcards.server}'s workers under load (profile {wildcards.profile})"
    script:
        "scripts/recycle.py"


# Every server's runs side by side: results/recycle.csv (a row per setting and
# client), recycle_capacity.csv (a row per capacity life), recycle_checks.csv (what releases and bisect are shown) and each setting
# judged against the server's own, recycle_verdicts.csv.
rule recycle_table:
    input:
        LENS_RESULTS["recycle"],
    output:
        table=report(f"{RESULTS}/recycle.csv", category="Tables"),
        verdicts=report(f"{RESULTS}/recycle_verdicts.csv", category="Tables"),
        checks=f"{RESULTS}/recycle_checks.csv",
        capacity=report(f"{RESULTS}/recycle_capacity.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/recycle_table.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/recycle_table.py"
