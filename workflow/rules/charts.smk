# Charts from the summary, and the index page that shows them together.


# Every chart in one job: what costs is starting Python, importing pandas and
# Altair and starting the Vega renderer, not drawing (docs/development.md), so
# one job draws them all.
rule charts:
    input:
        summary=f"{RESULTS}/summary.csv",
        workers=f"{RESULTS}/workers.csv",
        steady=f"{RESULTS}/steady.csv",
        latency=f"{RESULTS}/latency.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
        # The verdict tables of the lenses that add a panel to the forest (Lens.forest), where made.
        forest=FOREST_TABLES,
    output:
        # Per chart: its own page, a PNG and an SVG, and the Vega-Lite spec index.html draws in place.
        **CHART_OUTPUTS,
    log:
        f"{RESULTS}/logs/charts.log",
    conda:
        "../../envs/workflow.yaml"
    params:
        charts=list(CHARTS),
    script:
        "../scripts/chart.py"


rule index:
    input:
        summary=f"{RESULTS}/summary.csv",
        runs=f"{RESULTS}/runs.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
        environment=f"{RESULTS}/environment.json",
        seeds=f"{RESULTS}/seeds.csv",
        seed_claims=f"{RESULTS}/seed_claims.csv",
        charts=CHART_FILES,
        # Every lens's tables the run makes: each lens's section of the page (serverbench.registry).
        lenses=ALL_LENS_TABLES,
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


# What a reader sees (Debian's chromium): index.html at a laptop's and a phone's
# width (index-desktop.png, index-phone.png), its console errors and layout, and
# status.json. Where no browser is installed the folder holds only status.json,
# which says so: the run's targets depend on its config, not on the machine.
rule screenshots:
    input:
        f"{RESULTS}/index.html",
    output:
        report(
            directory(f"{RESULTS}/screenshots"),
            patterns=["index-{width}.png"],
            category="Overview",
        ),
    log:
        f"{RESULTS}/logs/screenshots.log",
    conda:
        "../../envs/workflow.yaml"
    script:
        "../scripts/screenshots.py"
