# Validates the config before any job exists and derives the cell matrix once.
import inspect
import json
from dataclasses import asdict
import sys
from pathlib import Path

from serverbench.host import engine as sbengine
from serverbench.host.programs import INSTALLERS as PROGRAM_INSTALLERS
from serverbench.plan import apps as sbapps
from serverbench.plan import config as sbconfig
from serverbench.plan.digest import config_hash
from serverbench.plan.releases import install_record_name, releases_in
from serverbench.plan.languages import title as language_title
from serverbench.plan.matrix import Matrix, kept_seed
from serverbench.plan.shapes import CELL_PATH, RATE_CELL_PATH
from serverbench.plan.tools import programs_of
from serverbench import registry
from serverbench.lens import Place
from serverbench.report.answers import print_answers
from serverbench.report.health import print_health
from serverbench.report.names import CHARTS

try:
    sbconfig.validate(config)
except sbconfig.ConfigError as error:
    sys.exit(str(error))

RESULTS = config["results"].rstrip("/")
# Given, or drawn once and kept in the results directory (a resumed run keeps its seed).
config["seed"] = kept_seed(config)
MATRIX = Matrix(config)
# How the report calls each language ("Python", not "python").
LANGUAGE_TITLES = {
    language: language_title(config, language) for language in config["languages"]
}
CELL_PATTERN = f"{RESULTS}/cells/{CELL_PATH}"
RATE_CELL_PATTERN = f"{RESULTS}/cells/{RATE_CELL_PATH}"
# A server's capacity in a profile and workload, which its rate cells offer fractions of.
CAPACITY = f"{RESULTS}/capacity/{{profile}}/{{workload}}/{{server}}.json"
# The group of a round's cells (workflow/rules/bench.smk): the name
# profiles/slurm gives `group-components`.
ROUND_GROUP = "round-{profile}-r{repeat}"
RATE_ROUND_GROUP = "rate-round-{profile}-r{repeat}"
# A cell's repeats share this path (CELL_PATH less its /r{repeat}).
CELL_GROUP = CELL_PATH.rsplit("/", 1)[0]
# CHARTS (imported): name -> title of every chart, from serverbench.report.names,
# so parsing the workflow loads no charting library.
# index.html as a reader sees it (a status only, where no browser is installed).
SCREENSHOTS = [f"{RESULTS}/screenshots"] if config["screenshots"] else []
CHART_EXTENSIONS = ("html", "png", "svg", "json")
CHART_FILES = [
    f"{RESULTS}/charts/{name}.{ext}" for name in CHARTS for ext in CHART_EXTENSIONS
]


def chart_output(name, ext):
    """A chart's file; its page and its PNG are shown in the report."""
    path = f"{RESULTS}/charts/{name}.{ext}"
    if ext not in ("html", "png"):
        return path
    kind = {"html": "interactive", "png": "static"}[ext]
    return report(path, category="Charts", subcategory=kind, labels={"chart": name})


# The charts rule's outputs by name, `{chart}_{ext}`.
CHART_OUTPUTS = {
    f"{name}_{ext}": chart_output(name, ext)
    for name in CHARTS
    for ext in CHART_EXTENSIONS
}

# isolation: docker: the engine this run started, if it started one (stopped at the end).
DOCKER_RUN = {}


def docker_up():
    """The engine that answers, or serverbench's own started for this run."""
    if any(profile.isolation == "docker" for profile in MATRIX.profiles.values()):
        try:
            DOCKER_RUN["session"] = sbengine.open_session(config)
        except sbengine.EngineError as error:
            print(f"serverbench: docker isolation: {error}", file=sys.stderr)


def docker_down():
    if "session" in DOCKER_RUN:
        DOCKER_RUN.pop("session").close()


wildcard_constraints:
    profile=r"[A-Za-z0-9_.-]+",
    workload=r"[A-Za-z0-9_.-]+",
    tool=r"[A-Za-z0-9_.-]+",
    server=r"[A-Za-z0-9_.+@-]+",
    package=r"[A-Za-z0-9_.-]+",
    concurrency=r"\d+",
    repeat=r"\d+",
    fraction=r"[0-9]+(\.[0-9]+)?",
    n=r"\d+",


def per_cell(function):
    """A function of a cell's wildcards that Snakemake calls for every cell: it reads the
    function's signature at each call (inspect.signature, about 5% of planning a large
    matrix), unless the function carries its own, as this gives it."""
    function.__signature__ = inspect.signature(function)
    return function


def cell_relpath(wildcards):
    """The cell's path below cells/ (a rate cell's has its fraction)."""
    pattern = RATE_CELL_PATH if "fraction" in wildcards.keys() else CELL_PATH
    return pattern.format(**wildcards)


@per_cell
def cell_priority(wildcards):
    """The first cell of the seeded shuffle runs first."""
    return MATRIX.priority(cell_relpath(wildcards))


@per_cell
def cell_position(wildcards):
    """The cell's place in the seeded order (1 = first), recorded in its result."""
    return MATRIX.position(cell_relpath(wildcards)) or 0


def capacity_cells(wildcards):
    """The closed-loop cells that measure a server's capacity."""
    cells = MATRIX.capacity_cells(
        wildcards.profile, wildcards.workload, wildcards.server
    )
    return [f"{RESULTS}/cells/{cell.relpath}.json" for cell in cells]


def conformance_path(profile, server):
    """The conformance result (the http lens's job) a server's cells in ``profile`` wait for."""
    probed_in = MATRIX.conformance_profile(profile, server)
    return f"{RESULTS}/conformance/{probed_in}/{server}.json"


@per_cell
def server_conformance(wildcards):
    """The server's conformance result, which its cells wait for (none with conformance off)."""
    if not config["conformance"]:
        return []
    return conformance_path(wildcards.profile, wildcards.server)


def by_profile(value_of):
    """A rule's value that depends on the job's profile alone: the value itself where every
    profile of the run has the same one, else a function of the job's wildcards. Snakemake
    calls a function again for each job, and a large matrix's jobs are many (its planning:
    docs/benchmarks.md)."""
    first, *others = [value_of(name) for name in MATRIX.profiles]
    if all(value == first for value in others):
        return first
    return lambda wildcards: value_of(wildcards.profile)


def database_of(profile):
    """The template of the database a profile's app uses, where the profile starts one
    (serverbench.cell.database); none for SQLite or an app without a database."""
    engine = sbapps.database_engine(config, profile)
    if engine in (None, "sqlite"):
        return []
    return sbapps.database_template(config, engine, sbapps.app_name(config, profile))


cell_database = by_profile(database_of)


def database_setup_files(wildcards):
    """The repository's files an app's setup names ({apps}/...): a change remakes the template."""
    setup = config["apps"][wildcards.app].get("setup") or []
    named = [
        str(item).split("{apps}/", 1)[1]
        for item in setup
        if str(item).startswith("{apps}/")
    ]
    return [f"apps/{path}" for path in named if Path("apps", path).is_file()]


def rate_cell_results(wildcards=None):
    """Every rate cell's result (open-loop profiles)."""
    return [f"{RESULTS}/cells/{cell.relpath}.json" for cell in MATRIX.rate_cells]


def rounds_so_far(wildcards):
    """Every cell of a profile in its first n rounds, which its precision checkpoint judges."""
    return [
        f"{RESULTS}/cells/{cell.relpath}.json"
        for n in range(1, int(wildcards.n) + 1)
        for cell in MATRIX.round_of(wildcards.profile, n)
    ]


def measured_before_rounds(wildcards):
    """A profile's records of the lenses whose jobs run before its rounds (the work lens's,
    recycle's, the http lens's probes its servers' cells wait for)."""
    return [
        f"{RESULTS}/{path}"
        for lens in LENSES
        for path in lens.before_rounds_of(config, MATRIX, wildcards.profile)
    ]


def cell_results(wildcards=None):
    """Every cell's result; a precision-driven profile's further rounds appear as
    its checkpoint asks for them, whole rounds, `rounds_at_once` at a time."""
    files = [f"{RESULTS}/cells/{cell.relpath}.json" for cell in MATRIX.cells]
    for name, profile in MATRIX.profiles.items():
        if not profile.precision:
            continue
        n = profile.planned_repeats
        while True:
            decision = checkpoints.precision.get(profile=name, n=n).output[0]
            if not json.loads(Path(decision).read_text())["more"]:
                break
            added = profile.rounds_after(n)
            files += [
                f"{RESULTS}/cells/{cell.relpath}.json"
                for r in added
                for cell in MATRIX.round_of(name, r)
            ]
            n = added[-1]
    return files


# CPUs the cell pins its server and load tool to.
cell_threads = by_profile(
    lambda name: len(MATRIX.profiles[name].server_cpus)
    + len(MATRIX.profiles[name].client_cpus)
)
# The server's memory limit plus room for the load tool and the harness.
cell_mem_mb = by_profile(lambda name: MATRIX.profiles[name].memory_mb())
# Minutes a cell may take, from its profile's timings, with a margin.
cell_runtime = by_profile(lambda name: MATRIX.profiles[name].runtime_minutes())


@per_cell
def cell_conditions(wildcards):
    """Everything that shapes the cell's measurement: a change reruns it."""
    return MATRIX.conditions(
        wildcards.profile, wildcards.tool, wildcards.server, wildcards.workload
    )


# The run's servers and profiles, read once: run_installs is an input function of every
# server-starting job, and reading the matrix per job made planning quadratic in its cells.
RUN_SERVERS = sorted({cell.server for cell in MATRIX.cells})
RUN_PROFILES = sorted({cell.profile for cell in MATRIX.cells})


def release_installs(wildcards=None):
    """The install record of every release the run measures."""
    return [
        f"{RESULTS}/releases/install/{install_record_name(spec)}"
        for spec in releases_in(config, RUN_SERVERS)
    ]


def run_installs(wildcards=None):
    """Everything the run installs (workflow/rules/install.smk): every release it measures, the
    requirements of every app its profiles host and the load tools left to the run (oha). Every server-starting job waits for all
    of them, so no install runs beside a measurement."""
    sites = [
        sbapps.app_site_record(config, app)
        for app in sbapps.apps_needing_install(config, RUN_PROFILES)
    ]
    return release_installs() + sites + program_installs()


def program_installs():
    """The record of every load tool the install leaves to the run (oha) that the selected
    profiles load with, anywhere in their settings."""
    profiles = [
        sbconfig.requested_profile(config, name)
        for name in sbconfig.selected_profiles(config)
    ]
    needed = programs_of(config, profiles) & set(PROGRAM_INSTALLERS)
    return [f"{RESULTS}/installs/{program}.json" for program in sorted(needed)]


# The same for every job (it reads no wildcards): a list, not an input function, which
# Snakemake would call again for each of a large matrix's jobs.
RUN_INSTALLS = run_installs()


# The lenses (serverbench.registry): each one's job results and tables, below RESULTS. A
# lens's rules (workflow/rules/lenses.smk, and its own rules.smk) read these by its name.
LENSES = registry.lenses(config)
LENS_RESULTS = {
    lens.name: [f"{RESULTS}/{path}" for path in lens.jobs(config, MATRIX)]
    for lens in LENSES
}
# A lens's tables where the run gives it at least one job, else none.
LENS_TABLES = {
    lens.name: (
        [f"{RESULTS}/{name}" for name in lens.tables] if LENS_RESULTS[lens.name] else []
    )
    for lens in LENSES
}
LENS_OUTPUTS = {
    lens.name: (
        [f"{RESULTS}/{name}" for name in lens.outputs]
        if LENS_RESULTS[lens.name]
        else []
    )
    for lens in LENSES
}
ALL_LENS_TABLES = [path for lens in LENSES for path in LENS_TABLES[lens.name]]
ALL_LENS_OUTPUTS = [path for lens in LENSES for path in LENS_OUTPUTS[lens.name]]
# Each lens's answer as it prints it (rule answered), for the lenses with a section whose
# tables the run makes (its section says whether it has console lines); a closing lens's
# sentences join the Answers, which read the run's verdicts: they print at its end alone.
LENS_ANSWERS = [
    f"{RESULTS}/answers/{lens.name}.txt"
    for lens in LENSES
    if lens.section is not None
    and lens.place != Place.CLOSING
    and LENS_TABLES[lens.name]
]
# The checks the lenses offer to releases and bisect (their fields, as a rule's params), and
# the tables they are read from where the run makes them.
OFFERED_CHECKS = [asdict(check) for check in registry.offered_checks(LENSES)]
OFFERING_TABLES = sorted(
    {
        f"{RESULTS}/{name}"
        for lens in LENSES
        for check in lens.checks
        for name in (check.table, check.verdicts)
        if name and f"{RESULTS}/{name}" in LENS_TABLES[lens.name]
    }
)
# The verdict tables of the lenses that add a panel to the forest of comparisons, where made.
FOREST_TABLES = [
    f"{RESULTS}/{lens.forest.table}"
    for lens in LENSES
    if lens.forest and f"{RESULTS}/{lens.forest.table}" in LENS_TABLES[lens.name]
]
