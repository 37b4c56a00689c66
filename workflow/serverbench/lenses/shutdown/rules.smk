# A server stopped under load (serverbench.lenses.shutdown.measure): one job per (profile,
# server) of a profile with `shutdown`, before that profile's cells. It starts the server
# afresh for each stop, loads it and stops it as the catalogue's `stop` declares; a server
# that drops requests or will not stop is a finding in its result, never a failed job.


rule shutdown:
    input:
        database=cell_database,
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        f"{RESULTS}/shutdown/{{profile}}/{{server}}.json",
    log:
        f"{RESULTS}/logs/shutdown/{{profile}}/{{server}}.log",
    # Before every cell: its load and stops would disturb a timed cell beside it.
    priority: len(MATRIX.order) + 1
    conda:
        "../../../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    message:
        "stopping {wildcards.server} under load (profile {wildcards.profile})"
    script:
        "scripts/shutdown.py"


# Every server's stops side by side: results/shutdown.csv, a row per (profile, server, how,
# delay); and each server's stops judged against each other, shutdown_verdicts.csv
# (serverbench.lenses.shutdown.decide).
rule shutdown_table:
    input:
        LENS_RESULTS["shutdown"],
    output:
        table=report(f"{RESULTS}/shutdown.csv", category="Tables"),
        verdicts=report(f"{RESULTS}/shutdown_verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/shutdown_table.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/shutdown_table.py"
