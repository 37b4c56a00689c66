# One job per cell, self-contained: it shares nothing with other jobs but
# files, and declares only standard resources (the CPUs its server and load
# tool are pinned to, memory, runtime), so any executor can place it. Which
# jobs may run side by side is the profile's business: the local one
# (profiles/default) gives every bench job the single bench_slot, so cells
# never overlap on one machine.
#
# A round is the unit of placement: a round's cells belong to one group
# (ROUND_GROUP), which an executor submits as one job when the profile spans
# the group's unconnected cells (`group-components`, as profiles/slurm does):
# one node runs the round's cells one after the other in their seeded order,
# so the two sides of every comparison share a machine and its slow episodes.
# Run locally, Snakemake ignores groups. Rate cells wait for the capacity of
# every round, so they form rounds of their own (RATE_ROUND_GROUP).


rule bench:
    input:
        # Not read: the server's conformance job runs before its cells.
        conformance=server_conformance,
        # The cluster the cell copies and starts for its app (PostgreSQL only).
        database=cell_database,
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        result=f"{CELL_PATTERN}.json",
        raw=f"{CELL_PATTERN}.load.txt",
    log:
        server=f"{CELL_PATTERN}.server.log",
    priority: cell_priority
    group:
        ROUND_GROUP
    conda:
        "../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
        runtime=cell_runtime,
        # Informational: the cell's place in the seeded order, for its record
        # (no profile limits it; a resource, unlike a param, triggers no rerun).
        run_position=cell_position,
    params:
        conditions=cell_conditions,
    message:
        "measuring {wildcards.server} with {wildcards.tool} at c={wildcards.concurrency} "
        "(profile {wildcards.profile}, workload {wildcards.workload}, repeat {wildcards.repeat})"
    script:
        "../scripts/bench_cell.py"


# A server's capacity (its highest comparable median req/s, with its interval)
# from its closed-loop cells: what its rate cells offer fractions of.
rule capacity:
    input:
        capacity_cells,
    output:
        CAPACITY,
    log:
        f"{RESULTS}/logs/capacity/{{profile}}/{{workload}}/{{server}}.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/capacity.py"


# Open loop: a constant rate, a fraction of the server's own capacity, so the
# capacity is an input and the DAG shows that every rate cell waits for it.
rule bench_rate:
    input:
        capacity=CAPACITY,
        database=cell_database,
        # Every release the run measures and the app's own requirements, installed first.
        installs=RUN_INSTALLS,
    output:
        result=f"{RATE_CELL_PATTERN}.json",
        raw=f"{RATE_CELL_PATTERN}.load.txt",
    log:
        server=f"{RATE_CELL_PATTERN}.server.log",
    priority: cell_priority
    group:
        RATE_ROUND_GROUP
    conda:
        "../../envs/workflow.yaml"
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
        runtime=cell_runtime,
        run_position=cell_position,
    params:
        conditions=cell_conditions,
    message:
        "offering {wildcards.fraction} of {wildcards.server}'s capacity with {wildcards.tool} "
        "(profile {wildcards.profile}, workload {wildcards.workload}, repeat {wildcards.repeat})"
    script:
        "../scripts/bench_cell.py"


# Profiles with `precision`: after min_repeats rounds, one whole round more at a
# time (every cell of the profile, in its own random order) until each declared
# comparison is decided or could have detected a ratio of 1 + precision, or
# max_repeats rounds are reached, or one more would pass the measuring budget.
checkpoint precision:
    input:
        rounds=rounds_so_far,
        # Their jobs ran before the rounds: the measuring budget counts from their start.
        before=measured_before_rounds,
    output:
        f"{RESULTS}/precision/{{profile}}/n{{n}}.json",
    log:
        f"{RESULTS}/logs/precision/{{profile}}/n{{n}}.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/precision.py"
