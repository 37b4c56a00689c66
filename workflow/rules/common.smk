# Validates the config before any job exists and derives the cell matrix once.
import sys

from serverbench import charts as sbcharts
from serverbench import config as sbconfig
from serverbench.matrix import Matrix
from serverbench.model import CELL_PATH
from serverbench.results import config_hash
from serverbench.verdicts import print_answers

try:
    sbconfig.validate(config)
except sbconfig.ConfigError as error:
    sys.exit(str(error))

RESULTS = config["results"].rstrip("/")
MATRIX = Matrix(config)
CELL_PATTERN = f"{RESULTS}/cells/{CELL_PATH}"
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
    """The first cell of the seeded shuffle runs first."""
    return MATRIX.priority(CELL_PATH.format(**wildcards))


def cell_position(wildcards):
    """The cell's place in the seeded order (1 = first), recorded in its result."""
    return MATRIX.position(CELL_PATH.format(**wildcards)) or 0


def cell_results():
    return [f"{RESULTS}/cells/{cell.relpath}.json" for cell in MATRIX.cells]


def cell_threads(wildcards):
    """CPUs the cell pins its server and load tool to."""
    profile = MATRIX.profiles[wildcards.profile]
    return len(profile.server_cpus) + len(profile.client_cpus)


def cell_mem_mb(wildcards):
    """The server's memory limit plus room for the load tool and the harness."""
    return MATRIX.profiles[wildcards.profile].memory_mb()


def cell_runtime(wildcards):
    """Minutes a cell may take, from its profile's timings, with a margin."""
    return MATRIX.profiles[wildcards.profile].runtime_minutes()


def cell_conditions(wildcards):
    """Everything that shapes the cell's measurement: a change reruns it."""
    return MATRIX.conditions(
        wildcards.profile, wildcards.tool, wildcards.server, wildcards.workload
    )
