# Charts from the summary, and the index page that shows them together.


rule chart:
    input:
        summary=f"{RESULTS}/summary.csv",
        workers=f"{RESULTS}/workers.csv",
        steady=f"{RESULTS}/steady.csv",
        latency=f"{RESULTS}/latency.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
    output:
        html=report(
            f"{RESULTS}/charts/{{chart}}.html",
            category="Charts",
            subcategory="interactive",
            labels={"chart": "{chart}"},
        ),
        png=report(
            f"{RESULTS}/charts/{{chart}}.png",
            category="Charts",
            subcategory="static",
            labels={"chart": "{chart}"},
        ),
        svg=f"{RESULTS}/charts/{{chart}}.svg",
        # The Vega-Lite spec, which index.html draws in place.
        json=f"{RESULTS}/charts/{{chart}}.json",
    log:
        f"{RESULTS}/logs/chart-{{chart}}.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/chart.py"


rule index:
    input:
        summary=f"{RESULTS}/summary.csv",
        runs=f"{RESULTS}/runs.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
        environment=f"{RESULTS}/environment.json",
        conformance=f"{RESULTS}/conformance.csv",
        seeds=f"{RESULTS}/seeds.csv",
        seed_claims=f"{RESULTS}/seed_claims.csv",
        charts=CHART_FILES,
        # work.csv, work_detail.csv, work_verdicts.csv where a profile counts work.
        work=WORK_TABLES,
    output:
        index=report(f"{RESULTS}/index.html", category="Overview"),
        answers=f"{RESULTS}/answers.md",
    log:
        f"{RESULTS}/logs/index.log",
    conda:
        "../../envs/workflow.yaml"
    params:
        charts=CHARTS,
        languages=LANGUAGE_TITLES,
    script:
        "../scripts/index.py"


# What a reader sees, where a browser is installed (Debian's chromium).
rule screenshots:
    input:
        f"{RESULTS}/index.html",
    output:
        desktop=report(f"{RESULTS}/screenshots/index-desktop.png", category="Overview"),
        phone=report(f"{RESULTS}/screenshots/index-phone.png", category="Overview"),
        console=f"{RESULTS}/screenshots/console-errors.json",
        # The page's width, each chart's place, and what keeps a reader from it.
        layout=f"{RESULTS}/screenshots/layout.json",
    log:
        f"{RESULTS}/logs/screenshots.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/screenshots.py"
