# Does the server need a front? (serverbench.lenses.front.measure): one job per (profile,
# server) of a profile with `front`, for each server not itself behind a front,
# before that profile's cells. The server runs bare and behind each front the
# profile lists for it, side by side, under fast and slow clients; a deployment
# that fails is a finding in its result, never a failed job.


rule front:
    input:
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        f"{RESULTS}/front/{{profile}}/{{server}}.json",
    log:
        f"{RESULTS}/logs/front/{{profile}}/{{server}}.log",
    # Before every cell, after the probes: its load would disturb a timed cell beside it.
    priority: len(MATRIX.order) + 1
    conda:
        "../../../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    message:
        "{wildcards.server} bare and behind a front, under fast and slow clients (profile {wildcards.profile})"
    script:
        "scripts/front.py"


# Every run (front.csv) and, per server, the front's cost with fast clients and
# what it saves with slow ones (front_verdicts.csv, serverbench.lenses.front.decide),
# what the lenses count per request of both deployments beside it (their offered checks with
# a margin: the work lens's, where the run counted work).
rule front_table:
    input:
        records=LENS_RESULTS["front"],
        counted=[
            f"{RESULTS}/{check['table']}"
            for check in OFFERED_CHECKS
            if check["margin_key"] and f"{RESULTS}/{check['table']}" in OFFERING_TABLES
        ],
    output:
        table=report(f"{RESULTS}/front.csv", category="Tables"),
        verdicts=report(f"{RESULTS}/front_verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/front_table.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    params:
        # The checks as their lenses declare them (serverbench.lens.Check).
        checks=OFFERED_CHECKS,
    script:
        "scripts/front_table.py"
