# Does each server speak HTTP? (serverbench.lenses.http.measure): one job per
# (profile, server), before that server's cells (their rule waits for it:
# common.smk's server_conformance). It starts the server as its cells would and
# probes it over raw sockets. Its result never changes a req/s figure; a server
# that cannot be probed is a recorded failure.


rule conformance:
    input:
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        f"{RESULTS}/conformance/{{profile}}/{{server}}.json",
    log:
        f"{RESULTS}/logs/conformance/{{profile}}/{{server}}.log",
    # Every server's probes before any cell (after the steadiness check), so the
    # cells keep their seeded order instead of following whichever server was probed.
    priority: len(MATRIX.order) + 1
    conda:
        "../../../../envs/workflow.yaml"
    # The server runs pinned and limited as in its cells.
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    message:
        "probing how {wildcards.server} speaks HTTP (profile {wildcards.profile})"
    script:
        "scripts/conformance.py"


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
