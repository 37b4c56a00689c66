"""Every lens's measuring and table job the core wires (workflow/rules/lenses.smk): the entry
point its lens names (serverbench.lens.MeasureJob, TableJob), found by the job's rule."""

import sys

from serverbench import registry
from serverbench.lens import entry_point

job = snakemake  # noqa: F821 (injected by Snakemake)
lens, kind = registry.wired_job(job.config, job.rule)
if kind == "measure":
    # The rule's log is the server's own output (each start appends to it), not this job's stderr.
    wildcards = dict(job.wildcards.items())
    further = [value for name, value in wildcards.items() if name not in ("profile", "server")]
    run = entry_point(lens.measure_job.entry)
    run(
        job.config,
        wildcards["profile"],
        wildcards["server"],
        *further,
        json_path=job.output.record,
        log_path=job.log[0],
    )
else:
    with open(job.log[0], "w") as sys.stderr:
        outputs = {name: getattr(job.output, name) for name in lens.table_job.outputs}
        entry_point(lens.table_job.entry)(job.config, list(job.input.records), outputs)
