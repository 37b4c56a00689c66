# One job per cell. Jobs never overlap: each holds the single bench_slot that
# the workflow profile (profiles/default/config.yaml) makes available.


rule bench:
    output:
        result=f"{CELL_PATTERN}.json",
        raw=f"{CELL_PATTERN}.load.txt",
    log:
        server=f"{CELL_PATTERN}.server.log",
    priority: cell_priority
    conda:
        "../../envs/workflow.yaml"
    resources:
        bench_slot=1,
    params:
        conditions=lambda wildcards: sbconfig.cell_conditions(
            config, wildcards.profile, wildcards.tool, wildcards.server
        ),
    message:
        "measuring {wildcards.server} with {wildcards.tool} at c={wildcards.concurrency} "
        "(profile {wildcards.profile}, repeat {wildcards.repeat})"
    script:
        "../scripts/bench_cell.py"
