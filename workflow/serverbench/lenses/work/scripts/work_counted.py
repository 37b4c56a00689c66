"""The work lens's first answer, printed and kept as soon as work.csv is made (before the timed
rounds): its comparisons judged on the counts alone (serverbench.lenses.work.report)."""

import sys

import pandas as pd
from serverbench.files import write_atomic
from serverbench.lenses.work.decide import work_verdict_table
from serverbench.lenses.work.report import counted_text

with open(snakemake.log[0], "w") as sys.stderr:  # noqa: F821 (injected by Snakemake)
    text = counted_text(work_verdict_table(pd.read_csv(snakemake.input[0]), snakemake.config))  # noqa: F821
    write_atomic(snakemake.output[0], text)  # noqa: F821
print(f"\nserverbench: the work lens has answered:{text}", flush=True)
