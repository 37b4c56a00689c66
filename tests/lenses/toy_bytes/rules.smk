# The toy lens (tests/test_lens.py): a job per (profile, server), then its tables.


rule toy_bytes:
    input:
        installs=RUN_INSTALLS,
    output:
        f"{RESULTS}/toy_bytes/{{profile}}/{{server}}.json",
    log:
        f"{RESULTS}/logs/toy_bytes/{{profile}}/{{server}}.log",
    priority: len(MATRIX.order) + 1
    threads: cell_threads
    resources:
        mem_mb=cell_mem_mb,
    script:
        "scripts/measure.py"


rule toy_bytes_table:
    input:
        records=LENS_RESULTS["toy_bytes"],
    output:
        table=f"{RESULTS}/toy_bytes.csv",
        verdicts=f"{RESULTS}/toy_bytes_verdicts.csv",
    log:
        f"{RESULTS}/logs/toy_bytes_table.log",
    localrule: True
    script:
        "scripts/table.py"
