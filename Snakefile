# serverbench: every (server, profile, load tool, concurrency, repeat) is one
# job; results merge into tidy tables and charts. See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/conformance.smk"
include: "workflow/rules/database.smk"
include: "workflow/rules/bench.smk"
include: "workflow/rules/work.smk"
include: "workflow/rules/operations.smk"
include: "workflow/rules/advise.smk"
include: "workflow/rules/front.smk"
include: "workflow/rules/releases.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/charts.smk"


# Steps that measure nothing run where snakemake runs: on a cluster only the
# cells, probes, work counts and the steadiness check become scheduler jobs
# (each light step would pay a job's start; docs/executors.md).
localrules:
    all,
    capacity,
    precision,
    collect,
    decide,
    decide_work,
    work_table,
    operations_table,
    advice_table,
    front_table,
    releases_table,
    conformance_table,
    seeds,
    chart,
    index,
    screenshots,


rule all:
    default_target: True
    input:
        f"{RESULTS}/runs.csv",
        f"{RESULTS}/summary.csv",
        f"{RESULTS}/environment.json",
        f"{RESULTS}/verdicts.csv",
        f"{RESULTS}/conformance.csv",
        f"{RESULTS}/index.html",
        *WORK_TABLES,
        *OPERATIONS_TABLES,
        *ADVICE_TABLES,
        *ADVICE_CONFIGS,
        *FRONT_TABLES,
        *RELEASE_TABLES,
        *CHART_FILES,
        *SCREENSHOTS,


onstart:
    docker_up()


onsuccess:
    docker_down()
    print_answers(f"{RESULTS}/verdicts.csv", f"{RESULTS}/conformance.csv")
    print_work(f"{RESULTS}/work_verdicts.csv")
    print_advice(f"{RESULTS}/advice_recommendations.csv")
    print_front(f"{RESULTS}/front_verdicts.csv")
    print_releases(f"{RESULTS}/release_verdicts.csv")


onerror:
    docker_down()
