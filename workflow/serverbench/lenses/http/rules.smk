# Does each server speak HTTP? Its probes, one job per (profile, server), are wired by the
# core (workflow/rules/lenses.smk, rule conformance: Lens.measure_job); its table stays here:
# its log, logs/conformance.log, is not the wired table rule's logs/conformance_table.log.


# Every server's checks side by side: results/conformance.csv, made in every run
# (empty with `conformance` off: the releases lens reads it; rule all asks for it).
rule conformance_table:
    input:
        LENS_RESULTS["http"],
    output:
        report(f"{RESULTS}/conformance.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/conformance.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/conformance_table.py"
