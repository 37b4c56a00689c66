# Merges every cell result into runs.csv (a row per repeat), summary.csv
# (a row per cell, with each server's capacity and knee where rate cells ran),
# latency.csv (a row per rate cell), workers.csv (workers over time) and
# steady.csv (req/s per second of each run), and records the machine and
# software of the run.


rule environment:
    output:
        f"{RESULTS}/environment.json",
    log:
        f"{RESULTS}/logs/environment.log",
    # Before every cell, so its steadiness check of the CPUs runs alone: the other jobs
    # ready then are cells, which wait for the bench slot it holds (profiles/default).
    priority: len(MATRIX.order) + 2
    conda:
        "../../envs/workflow.yaml"
    params:
        config_sha256=config_hash(config),
    script:
        "../scripts/environment.py"


rule collect:
    input:
        cells=cell_results,
        rates=rate_cell_results,
    output:
        runs=f"{RESULTS}/runs.csv",
        latency=report(f"{RESULTS}/latency.csv", category="Tables"),
        summary=report(f"{RESULTS}/summary.csv", category="Tables"),
        workers=report(f"{RESULTS}/workers.csv", category="Tables"),
        steady=report(f"{RESULTS}/steady.csv", category="Tables"),
        windows=report(f"{RESULTS}/windows.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/collect.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/collect.py"


rule decide:
    input:
        runs=f"{RESULTS}/runs.csv",
        summary=f"{RESULTS}/summary.csv",
        latency=f"{RESULTS}/latency.csv",
        windows=f"{RESULTS}/windows.csv",
    output:
        report(f"{RESULTS}/verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/decide.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/decide.py"


# The seed studies beside the run (serverbench.decide.seeds): each seed table a
# profile of the run re-runs, ranked and as ratios in both, and the seeds' claims.
rule seeds:
    input:
        runs=f"{RESULTS}/runs.csv",
        summary=f"{RESULTS}/summary.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
        studies="seeds/studies.yaml",
    output:
        side=report(f"{RESULTS}/seeds.csv", category="Tables"),
        claims=report(f"{RESULTS}/seed_claims.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/seeds.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/seeds.py"


# A lens's answer in the terminal as soon as its tables are made (the work lens's at minute 3
# of the default run, not at minute 10 with the rest), and kept as the text it printed.
rule answered:
    input:
        lambda wildcards: LENS_TABLES[wildcards.lens],
    output:
        f"{RESULTS}/answers/{{lens}}.txt",
    log:
        f"{RESULTS}/logs/answered/{{lens}}.log",
    # As soon as its tables are: before any cell still waiting (it only reads tables).
    priority: len(MATRIX.order) + 4
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/answered.py"
