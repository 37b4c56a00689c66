# Every release's figures (releases.csv) and each release against the baseline
# and the release before it, check by check (release_verdicts.csv), from the
# tables of the lenses that offer checks (Lens.checks) and conformance.csv.
rule releases_table:
    input:
        installs=release_installs,
        offered=OFFERING_TABLES,
        conformance=f"{RESULTS}/conformance.csv",
    output:
        table=report(f"{RESULTS}/releases.csv", category="Tables"),
        verdicts=report(f"{RESULTS}/release_verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/releases_table.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    params:
        # The checks as their lenses declare them (serverbench.lens.Check).
        checks=OFFERED_CHECKS,
    script:
        "scripts/releases_table.py"
