# The deployment decided on every lens (deploy.csv, results/deploy/): every
# lens's findings read through the registry (registry.findings) from the tables
# the run made, advise's candidates checked against them.
rule deploy_table:
    input:
        tables=[
            path
            for name in registry.ruling_lenses(config)
            for path in LENS_TABLES[name]
        ],
        outputs=[
            path
            for name in registry.ruling_lenses(config)
            for path in LENS_OUTPUTS[name]
        ],
    output:
        table=report(f"{RESULTS}/deploy.csv", category="Tables"),
        files=directory(f"{RESULTS}/deploy"),
    log:
        f"{RESULTS}/logs/deploy_table.log",
    localrule: True
    run:
        from serverbench.lenses.deploy.decide import write_tables

        write_tables(
            registry.findings(config, RESULTS), RESULTS, output.table, output.files
        )
