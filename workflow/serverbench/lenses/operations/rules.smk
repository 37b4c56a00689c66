# A server in operation (serverbench.lenses.operations.measure): one job per (profile,
# server) of a profile with `operations`, before that profile's cells. It starts
# the server several times (cold start, idle memory at each worker count) and
# reloads it under load; a server that breaks on reload is a finding in its
# result, never a failed job.


rule operations:
    input:
        database=cell_database,
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        f"{RESULTS}/operations/{{profile}}/{{server}}.json",
    log:
        f"{RESULTS}/logs/operations/{{profile}}/{{server}}.log",
    # After the steadiness check and the probes, before every cell: its load and
    # restarts would disturb a timed cell beside it.
    priority: len(MATRIX.order) + 1
    conda:
        "../../../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    message:
        "starting, reloading and weighing {wildcards.server} (profile {wildcards.profile})"
    script:
        "scripts/operations.py"


# Every server in operation side by side: results/operations.csv, a row per
# (profile, server, check) with its value, unit and interval; and every declared
# pair judged check by check, operations_verdicts.csv (serverbench.lenses.operations.decide).
rule operations_table:
    input:
        LENS_RESULTS["operations"],
    output:
        table=report(f"{RESULTS}/operations.csv", category="Tables"),
        verdicts=report(f"{RESULTS}/operations_verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/operations_table.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/operations_table.py"
