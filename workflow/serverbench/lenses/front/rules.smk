# Does the server need a front? Its measuring jobs (serverbench.lenses.front.measure) are
# wired by the core from its LENS; its table job, which also reads the counted checks other
# lenses offer, is its own.


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
