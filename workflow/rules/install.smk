# What a run installs before any server starts; a server-starting job waits for all of it
# (RUN_INSTALLS), so no install runs beside a measurement.
#
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


# An app's own requirements (`requirements` in its parts, serverbench.host.appsite): pip's
# into a site directory of the app's own that each cell's copy of the app puts first on its
# path, Debian's packages for Perl. One that cannot be installed is a recorded reason (the
# app's cells in that language skipped), never a failed job.
rule app_site:
    output:
        f"{RESULTS}/apps/{{app}}/site.json",
    log:
        f"{RESULTS}/logs/apps/{{app}}/site.log",
    priority: len(MATRIX.order) + 3
    conda:
        "../../envs/workflow.yaml"
    message:
        "installing the app {wildcards.app}'s own requirements"
    script:
        "../scripts/app_site.py"


# A load tool the install leaves to the runs that need it (oha: minutes of cargo, once per
# machine; serverbench.host.programs): built before any server starts. One that cannot be
# built is a recorded reason (the cells that need it skipped, naming it), never a failed job.
rule program_install:
    output:
        f"{RESULTS}/installs/{{program}}.json",
    log:
        f"{RESULTS}/logs/installs/{{program}}.log",
    wildcard_constraints:
        program="|".join(PROGRAM_INSTALLERS),
    priority: len(MATRIX.order) + 3
    conda:
        "../../envs/workflow.yaml"
    message:
        "building {wildcards.program}, which this run's profiles load with (once per machine)"
    script:
        "../scripts/program_install.py"
