# Every lens's measuring and table jobs, wired here once from what the lens declares
# (serverbench.lens.MeasureJob, TableJob) and run through one shim that calls the entry
# point it names. A lens's own rules.smk holds only what is its own.


def lens_measure_outputs(measure):
    """A measuring job's record, and the directory of its raw outputs beside it where it keeps one."""
    outputs = {"record": f"{RESULTS}/{measure.record}"}
    if measure.raw:
        outputs["raw"] = directory(f"{RESULTS}/{measure.raw}")
    return outputs


def lens_table_output(table, name):
    """A table job's output: a directory, a file Snakemake's report leaves out, or one of its Tables."""
    path = f"{RESULTS}/{table.outputs[name]}"
    if name in table.directories:
        return directory(path)
    if name in table.unshown:
        return path
    return report(path, category="Tables")


for lens in LENSES:
    if lens.measure_job is not None:
        measure = lens.measure_job

        # One job per record (LENS_RESULTS), as a cell is wired: after every install (every
        # release the run measures and the app's own requirements), with its profile's database
        # template where it asks, on the cell's CPUs and memory. Its entry point writes its
        # record whatever the server does: a server that fails is a finding, not a failed job.
        rule:
            name:
                lens.measure_rule
            input:
                database=cell_database if measure.database else [],
                installs=RUN_INSTALLS,
            output:
                **lens_measure_outputs(measure),
            log:
                f"{RESULTS}/logs/{measure.record.removesuffix('.json')}.log",
            # Before every cell, after the probes: its load would disturb a timed cell beside it.
            priority: len(MATRIX.order) + 1 if measure.before_cells else 0
            conda:
                "../../envs/workflow.yaml"
            threads: cell_threads
            resources:
                mem_mb=cell_mem_mb,
            message:
                measure.message
            script:
                "../scripts/lens_job.py"

    if lens.table_job is not None:
        table = lens.table_job

        # Its tables from every record its measuring jobs wrote, where snakemake runs.
        rule:
            name:
                lens.table_rule
            input:
                records=LENS_RESULTS[lens.name],
            output:
                **{name: lens_table_output(table, name) for name in table.outputs},
            log:
                f"{RESULTS}/logs/{lens.table_rule}.log",
            # Early: as soon as its jobs are done, before any cell still waiting (a first answer reads it).
            priority: len(MATRIX.order) + 4 if table.early else 0
            localrule: True
            conda:
                "../../envs/workflow.yaml"
            script:
                "../scripts/lens_job.py"
