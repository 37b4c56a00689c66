# Releases of a server (config `releases`, serverbench.plan.releases): each
# version is installed into a prefix of its own before any server of the run
# starts, then measured by the profile's lenses like any server. A version pip
# cannot install is a recorded reason (its servers skipped), never a failed job.


rule release_install:
    output:
        f"{RESULTS}/releases/install/{{package}}@{{version}}.json",
    log:
        f"{RESULTS}/logs/releases/{{package}}@{{version}}.log",
    # Before the steadiness check and every server: an install's CPU would disturb them.
    priority: len(MATRIX.order) + 3
    conda:
        "../../envs/workflow.yaml"
    message:
        "installing {wildcards.package} {wildcards.version} into a prefix of its own"
    script:
        "../scripts/release_install.py"


# Every release's figures (releases.csv) and each release against the baseline
# and the release before it, check by check (release_verdicts.csv,
# serverbench.decide.releases), from the lenses' tables.
rule releases_table:
    input:
        installs=release_installs,
        work=WORK_TABLES,
        operations=OPERATIONS_TABLES,
        conformance=f"{RESULTS}/conformance.csv",
    output:
        table=report(f"{RESULTS}/releases.csv", category="Tables"),
        verdicts=report(f"{RESULTS}/release_verdicts.csv", category="Tables"),
    log:
        f"{RESULTS}/logs/releases_table.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/releases_table.py"
