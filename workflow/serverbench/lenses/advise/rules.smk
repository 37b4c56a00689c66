# Your deployment, decided (serverbench.lenses.advise.measure): one job per (profile,
# server) of a profile with `advise`, before that profile's cells. It searches
# the server's settings for the most capacity at the p99 objective within the
# memory budget and reloads the best under load; a server that fails is a
# finding in its result, never a failed job.


rule advise:
    input:
        database=cell_database,
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        f"{RESULTS}/advice/{{profile}}/{{server}}.json",
    log:
        f"{RESULTS}/logs/advice/{{profile}}/{{server}}.log",
    # Before every cell, after the probes: its load would disturb a timed cell beside it.
    priority: len(MATRIX.order) + 1
    conda:
        "../../../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    message:
        "searching {wildcards.server}'s settings (profile {wildcards.profile})"
    script:
        "scripts/advise.py"


# Every setting searched (advice.csv), each server's recommendation ranked
# (advice_recommendations.csv, serverbench.lenses.advise.decide) and its configuration
# as a user deploys it (advice/configurations/SERVER/, serverbench.lenses.advise.deploy).
rule advice_table:
    input:
        LENS_RESULTS["advise"],
    output:
        table=report(f"{RESULTS}/advice.csv", category="Tables"),
        recommendations=report(
            f"{RESULTS}/advice_recommendations.csv", category="Tables"
        ),
        configurations=directory(f"{RESULTS}/advice/configurations"),
    log:
        f"{RESULTS}/logs/advice_table.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/advice_table.py"
