# Validates the config before any job exists and derives the cell matrix.
import sys

from serverbench import charts as sbcharts
from serverbench import config as sbconfig
from serverbench.results import config_hash

try:
    sbconfig.validate(config)
except sbconfig.ConfigError as error:
    sys.exit(str(error))

RESULTS = config["results"].rstrip("/")
CELLS = sbconfig.shuffled_cells(config)
# The bench rule's priority: the first cell of the seeded shuffle runs first.
RUN_ORDER = {cell.relpath: len(CELLS) - index for index, cell in enumerate(CELLS)}
CELL_PATTERN = f"{RESULTS}/cells/{{profile}}/{{workload}}/{{tool}}/{{server}}/c{{concurrency}}/r{{repeat}}"
# name -> title of every chart (serverbench.charts)
CHARTS = sbcharts.CHARTS
CHART_FILES = [
    f"{RESULTS}/charts/{name}.{ext}"
    for name in CHARTS
    for ext in ("html", "png", "svg")
]


wildcard_constraints:
    profile=r"[A-Za-z0-9_.-]+",
    workload=r"[A-Za-z0-9_.-]+",
    tool=r"[A-Za-z0-9_.-]+",
    server=r"[A-Za-z0-9_.-]+",
    concurrency=r"\d+",
    repeat=r"\d+",


def cell_priority(wildcards):
    relpath = "{profile}/{workload}/{tool}/{server}/c{concurrency}/r{repeat}".format(
        **wildcards
    )
    return RUN_ORDER.get(relpath, 0)


def cell_results():
    return [f"{RESULTS}/cells/{cell.relpath}.json" for cell in CELLS]


def cell_threads(wildcards):
    """CPUs the cell pins its server and load tool to."""
    profile = sbconfig.effective_profile(config, wildcards.profile)
    return len(profile["server_cpus"]) + len(profile["client_cpus"])


def cell_mem_mb(wildcards):
    """The server's memory limit plus room for the load tool and the harness."""
    profile = sbconfig.effective_profile(config, wildcards.profile)
    return (profile["memory_limit"] or 2 * 1024**3) // 2**20 + 1024


def cell_runtime(wildcards):
    """Minutes a cell may take, from its profile's timings, with a margin."""
    return sbconfig.cell_runtime_minutes(
        sbconfig.effective_profile(config, wildcards.profile)
    )
