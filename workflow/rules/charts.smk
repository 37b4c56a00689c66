# Charts from the summary, and the index page that shows them together.


rule chart:
    input:
        summary=f"{RESULTS}/summary.csv",
    output:
        html=f"{RESULTS}/charts/{{chart}}.html",
        png=f"{RESULTS}/charts/{{chart}}.png",
    log:
        f"{RESULTS}/logs/chart-{{chart}}.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/chart.py"


rule index:
    input:
        summary=f"{RESULTS}/summary.csv",
        environment=f"{RESULTS}/environment.json",
        charts=CHART_FILES,
    output:
        f"{RESULTS}/index.html",
    log:
        f"{RESULTS}/logs/index.log",
    conda:
        "../../envs/workflow.yaml"
    params:
        charts=CHARTS,
    script:
        "../scripts/index.py"
