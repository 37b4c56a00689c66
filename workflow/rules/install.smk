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
