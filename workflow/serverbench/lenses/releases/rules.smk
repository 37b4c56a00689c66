# Every release's figures (releases.csv) and each release against the baseline
# and the release before it, check by check (release_verdicts.csv,
# serverbench.decide.releases), from the lenses' tables.
rule releases_table:
    input:
        installs=release_installs,
        # The checks of the lenses that offer them (their declared tables).
        work=LENS_TABLES["work"],
        operations=LENS_TABLES["operations"],
        conformance=f"{RESULTS}/conformance.csv",
    output:
        table=report(f"{RESULTS}/releases.csv", category="Tables"),
        verdicts=report(f"{RESULTS}/release_verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/releases_table.log",
    localrule: True
    conda:
        "../../../../envs/workflow.yaml"
    script:
        "scripts/releases_table.py"
