# serverbench: every (server, profile, load tool, concurrency, repeat) is one
# job; results merge into tidy tables and charts. See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/database.smk"
include: "workflow/rules/bench.smk"
include: "workflow/rules/install.smk"
# Every lens's measuring and table jobs, from what it declares, then each lens's own rules
# from its folder, where it has any (serverbench.registry).
include: "workflow/rules/lenses.smk"


for lens in LENSES:
    if lens.rules.is_file():

        include: str(lens.rules)


include: "workflow/rules/collect.smk"
include: "workflow/rules/charts.smk"


# Steps that measure nothing run where snakemake runs: on a cluster only the
# cells, probes, the lenses' jobs and the steadiness check become scheduler jobs
# (each light step would pay a job's start; docs/executors.md). A lens marks its
# own light rules (`localrule: True`).
localrules:
    all,
    capacity,
    precision,
    collect,
    decide,
    seeds,
    answered,
    charts,
    index,
    screenshots,


rule all:
    default_target: True
    input:
        f"{RESULTS}/runs.csv",
        f"{RESULTS}/summary.csv",
        f"{RESULTS}/environment.json",
        f"{RESULTS}/verdicts.csv",
        # The HTTP lens's table in every run, empty with `conformance` off: releases reads it.
        f"{RESULTS}/conformance.csv",
        f"{RESULTS}/index.html",
        *ALL_LENS_TABLES,
        *ALL_LENS_OUTPUTS,
        *LENS_ANSWERS,
        *CHART_FILES,
        *SCREENSHOTS,


onstart:
    docker_up()


onsuccess:
    docker_down()
    print_answers(f"{RESULTS}/verdicts.csv")
    registry.print_consoles(config, RESULTS)
    # Last: under `strict` a run to look at ends here with a non-zero exit status.
    print_health(config, RESULTS, FOREST_TABLES)


onerror:
    docker_down()
