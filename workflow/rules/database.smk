# A database server's template for the cells whose app uses one (serverbench.cell.database):
# one initialised, stopped cluster per run, engine and app, with the app's rows (its
# setup runs here, once), made before the cells that need it. Each of those cells
# copies it into its own run directory, starts it there and stops it with the
# cell, so no database outlives its job.


rule database_template:
    input:
        database_setup_files,
    output:
        directory(f"{RESULTS}/databases/{{engine}}/{{app}}"),
    log:
        f"{RESULTS}/logs/databases/{{engine}}/{{app}}.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    params:
        setup=lambda wildcards: config["apps"][wildcards.app].get("setup"),
    message:
        "initialising the {wildcards.engine} template with {wildcards.app}'s rows that its cells copy"
    script:
        "../scripts/database_template.py"
