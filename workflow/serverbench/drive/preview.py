"""``serverbench plan PROFILE [KEY=VALUE ...]``: what a run will do before it runs, and how long
it will take here. From the config as the run reads it (``--configfile`` files of one's own
merged over it and the overrides ``snakemake --config`` takes, ``drive.configfiles``), the cell
matrix and the lens registry: the servers, the lenses and their jobs (the http lens's are the
probes), the cells in their rounds (and the rounds precision may add) and the installs; then the
time, job kind by job kind, from the records earlier runs on this host left in a results
directory (each record's own seconds: the mean of its kind, the planned profiles' where there
are any; a run spends the sum, so a median would leave out the slow tail every run has). A
cell's time is its profile's warm-up and duration plus what earlier cells here took besides
measuring (starting, verifying and stopping their server), else a few seconds. Nothing is
measured."""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from serverbench import REPO_ROOT, files, registry
from serverbench.drive import configfiles, docsfigures
from serverbench.plan import apps
from serverbench.plan import config as cfg
from serverbench.plan.matrix import Matrix
from serverbench.plan.releases import releases_in

CELLS_BY_THE_PROFILE = "the profile"  # a cell's time from its profile and a guessed start and stop
CELL_START_STOP_S = 3.0  # a cell's server started, verified and stopped, where no earlier run says
SMALL_JOBS_S = 60.0  # the tables, charts and page at the end of a run


@dataclass(frozen=True)
class Kind:
    """One kind of job of a run: how many, and each one's seconds (and where that comes from)."""

    name: str
    jobs: int
    seconds_each: float | None
    source: str  # "earlier runs here (N records)", "the profile", "unknown: no earlier run here"
    timed_here: bool = False  # from records an earlier run here left

    @property
    def seconds(self) -> float | None:
        return None if self.seconds_each is None else self.jobs * self.seconds_each


def load(path: Path, own_files: list[Path], profile: str, overrides: list[str]) -> dict:
    """The config as snakemake --configfile PATH FILE ... --config profile=PROFILE KEY=VALUE ... would read it."""
    pairs = {"profile": profile}
    for text in overrides:
        key, _, value = text.partition("=")
        pairs[key] = yaml.safe_load(value)
    return configfiles.load(path, own_files, pairs)


def record_seconds(path: Path) -> float | None:
    """A job record's own duration: its ``seconds``, or a cell's timing from job start to end."""
    try:
        data = files.read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("seconds"), int | float):
        return float(data["seconds"])
    timing = data.get("timing") or {}
    if isinstance(timing, dict) and all(isinstance(timing.get(key), int | float) for key in ("job_start", "job_end")):
        return float(timing["job_end"]) - float(timing["job_start"])
    return None


def spent(results: Path) -> dict[str, float]:
    """What a finished run's jobs took, by kind of job (the folder of its records below
    ``results``: cells, conformance, each lens's): the sum of their records' own seconds, as
    `plan` estimates them. Jobs that ran side by side count each, so the sums can pass the wall
    time."""
    found = {}
    for folder in sorted(path for path in results.iterdir() if path.is_dir()):
        seconds = [record_seconds(path) for path in folder.rglob("*.json")]
        seconds = [value for value in seconds if value is not None]
        if seconds:
            found[folder.name] = round(sum(seconds), 1)
    return found


# A cell record's timing stamps each phase as it begins (cell.phases, cell.session): a phase lasts
# until the next stamp the record has; "setup" is the harness's own start, "stop" runs to job_end.
PHASE_STAMPS = ("job_start", "prepare", "start", "ready", "verify", "warmup", "load", "stop", "job_end")
PHASE_NAMES = {"job_start": "setup"}


def phase_seconds(timing: dict) -> dict[str, float]:
    """One cell's phases and their seconds, from its record's timing stamps."""
    stamps = [(key, timing[key]) for key in PHASE_STAMPS if isinstance(timing.get(key), int | float)]
    pairs = itertools.pairwise(stamps)
    return {PHASE_NAMES.get(key, key): end - begun for (key, begun), (_, end) in pairs}


def cell_phases(results: Path) -> dict[str, float]:
    """The median seconds of each phase over a finished run's cells (their records' timing)."""
    found: dict[str, list[float]] = {}
    for path in sorted((results / "cells").rglob("*.json")) if (results / "cells").is_dir() else []:
        try:
            data = files.read_json(path)
        except (OSError, ValueError):
            continue
        timing = data.get("timing") if isinstance(data, dict) else None
        for phase, seconds in phase_seconds(timing if isinstance(timing, dict) else {}).items():
            found.setdefault(phase, []).append(seconds)
    return {phase: round(statistics.median(values), 3) for phase, values in found.items()}


def cell_overhead(path: Path) -> float | None:
    """What an earlier cell took besides its warm-up and load: its server started and its answer
    checked, what follows the load (a fairness probe), its server stopped (from its timing and its
    load's own duration)."""
    try:
        data = files.read_json(path)
    except (OSError, ValueError):
        return None
    timing = (data.get("timing") if isinstance(data, dict) else None) or {}
    load = (data.get("load") if isinstance(data, dict) else None) or {}
    needed = [timing.get(key) for key in ("job_start", "warmup", "load", "job_end")] + [load.get("duration_s")]
    if not all(isinstance(value, int | float) for value in needed):
        return None
    return (timing["job_end"] - timing["job_start"]) - (timing["load"] - timing["warmup"]) - load["duration_s"]


def earlier(results: Path, folder: str, profiles: list[str]) -> list[float]:
    """The seconds of the earlier records of one job kind (``folder`` below the results), those
    of the profiles planned where there are any."""
    base = results / folder
    if not base.is_dir():
        return []
    found = {path: record_seconds(path) for path in base.rglob("*.json")}
    found = {path: seconds for path, seconds in found.items() if seconds is not None}
    mine = [s for p, s in found.items() if any(part in profiles for part in p.relative_to(base).parts)]
    return mine or list(found.values())


def kind(name: str, jobs: int, seen: list[float], fallback: float | None, fallback_source: str) -> Kind:
    if seen:
        return Kind(name, jobs, statistics.mean(seen), f"earlier runs here ({len(seen)} records)", timed_here=True)
    return Kind(name, jobs, fallback, fallback_source if fallback is not None else "unknown: no earlier run here")


# A cell's phases that are not its warm-up and load: what it spends starting, checking and stopping.
OVERHEAD_PHASES = ("setup", "prepare", "start", "ready", "verify", "stop")


def cells_kind(matrix: Matrix, results: Path, recorded: dict | None = None) -> Kind:
    """The cells: each its profile's warm-up and duration, plus the mean of what earlier cells
    here took besides, else what the recorded run's cells took besides (the medians of their
    phases), else ``CELL_START_STOP_S``."""
    base = results / "cells"
    seen = [cell_overhead(path) for path in base.rglob("*.json")] if base.is_dir() else []
    seen = [s for s in seen if s is not None and s >= 0]
    phases = (recorded or {}).get("phases") or {}
    if seen:
        overhead, source = statistics.mean(seen), f"the profile, and earlier cells here ({len(seen)} records)"
    elif all(name in phases for name in OVERHEAD_PHASES):
        overhead = sum(float(phases[name]) for name in OVERHEAD_PHASES)
        source = "the profile, and the recorded run's cell phases"
    else:
        overhead, source = CELL_START_STOP_S, CELLS_BY_THE_PROFILE
    measured = [float(matrix.profiles[c.profile].warmup or 0) + float(matrix.profiles[c.profile].duration or 0)
                for c in matrix.cells]  # fmt: skip
    each = (statistics.mean(measured) + overhead) if measured else 0.0
    return Kind("cells", len(matrix.cells), each, source, timed_here=bool(seen))


def kinds(config: dict, matrix: Matrix, results: Path, recorded: dict | None = None) -> list[Kind]:
    """Every kind of job the run will have, with its count and time."""
    profiles = list(matrix.profiles)
    found = [cells_kind(matrix, results, recorded)]
    for lens in registry.lenses(config):
        jobs = lens.jobs(config, matrix)
        if jobs:
            folder = Path(jobs[0]).parts[0]
            found.append(kind(f"{lens.name} lens", len(jobs), earlier(results, folder, profiles), None, ""))
    return found


def before_rounds_seconds(config: dict, matrix: Matrix, found: list[Kind]) -> dict[str, float]:
    """Per profile: the known seconds of the jobs that run before its rounds and count against
    its measuring budget, as the run's precision checkpoint counts them (the lenses that say
    ``before_rounds``: the work lens's, the http lens's probes)."""
    each = {k.name: k.seconds_each or 0.0 for k in found}
    spent = dict.fromkeys(matrix.profiles, 0.0)
    for lens in registry.lenses(config):
        for profile in spent:
            spent[profile] += len(lens.before_rounds_of(config, matrix, profile)) * each.get(f"{lens.name} lens", 0.0)
    return spent


def added_rounds_seconds(matrix: Matrix, each: float, before: dict[str, float] | None = None) -> dict[str, float]:
    """Per profile whose precision may add rounds: the seconds of every round it may add (up to
    ``max_repeats``), its rounds kept within its measuring budget (no round is started that
    would pass it), which the jobs before its rounds (``before``, by profile) count against."""
    added = {}
    for name, profile in matrix.profiles.items():
        planned = sum(1 for cell in matrix.cells if cell.profile == name)
        possible = sum(1 for cell in matrix.possible_cells if cell.profile == name)
        if not profile.precision or possible <= planned:
            continue
        seconds = (possible - planned) * each
        if profile.measuring_budget:
            spent = planned * each + (before or {}).get(name, 0.0)
            seconds = min(seconds, max(0.0, profile.measuring_budget - spent))
        added[name] = seconds
    return added


def from_recorded(found: list[Kind], recorded: dict | None) -> list[Kind]:
    """The kinds no earlier run here times, given what the recorded whole run of the profile (as
    planned: written, or shortened the same way) spent beyond the kinds that are timed: on a fresh
    clone a lens's jobs are known only from it (docs/data/profile-times.yaml). Where the cells'
    guessed overhead alone (no earlier cells here) passes the recorded run, the recorded run's
    time is the cells'."""
    if recorded is None or any(k.timed_here for k in found):
        return found  # a run here timed some of it: what it did not time is said, not filled in
    total = recorded["seconds"] - SMALL_JOBS_S
    cells, rest = found[0], found[1:]
    guessed = cells.source == CELLS_BY_THE_PROFILE
    if guessed and cells.seconds + sum(k.seconds or 0.0 for k in rest) > total:
        left = max(0.0, total - sum(k.seconds or 0.0 for k in rest))
        cells = Kind(cells.name, cells.jobs, left / cells.jobs, f"the recorded run of {recorded['profile']}")
        rest = [Kind(k.name, k.jobs, 0.0, "within the recorded run") if k.seconds is None else k for k in rest]
        return [cells, *rest]
    unknown = [k for k in found if k.seconds is None]
    if not unknown:
        return found
    left = max(0.0, total - sum(k.seconds for k in found if k.seconds is not None))
    each = left / sum(k.jobs for k in unknown)
    source = f"the recorded run of {recorded['profile']} ({recorded['figure']}) less the jobs timed above, shared"
    return [Kind(k.name, k.jobs, each, source) if k.seconds is None else k for k in found]


def preview(config: dict, results: Path, recorded: dict | None = None) -> dict:
    """What the run will do and its estimated time (the module's docstring), as data; ``recorded``:
    the recorded whole run of the one profile planned, where it was run as this plan runs it."""
    matrix = Matrix(config)
    servers = sorted({cell.server for cell in matrix.cells})
    lenses = [lens.name for lens in registry.lenses(config) if lens.jobs(config, matrix)]
    found = from_recorded(kinds(config, matrix, results, recorded), recorded)
    known = [k.seconds for k in found if k.seconds is not None]
    estimated = sum(known) + SMALL_JOBS_S
    added = added_rounds_seconds(matrix, found[0].seconds_each or 0.0, before_rounds_seconds(config, matrix, found))
    return {
        "profiles": list(matrix.profiles),
        "servers": servers,
        # The app each profile's servers host and the workloads its cells load (a config of one's own may name both).
        "apps": {name: apps.app_name(config, name) for name in matrix.profiles},
        "workloads": {name: list(profile.workloads) for name, profile in matrix.profiles.items()},
        "lenses": lenses,
        "cells": len(matrix.cells),
        "rounds": {name: len({c.repeat for c in matrix.cells if c.profile == name}) for name in matrix.profiles},
        "possible_cells": len(matrix.possible_cells) + len(matrix.rate_cells),
        "installs": [f"{spec['package']} {spec['version']}" for spec in releases_in(config, servers)],
        "jobs": [asdict(k) | {"seconds": k.seconds} for k in found],
        "estimated_s": round(estimated, 1),
        # If precision adds every round it may: the most the run can take (None: it adds none).
        "most_s": round(estimated + sum(added.values()), 1) if added else None,
        "most_rounds": {name: matrix.profiles[name].max_repeats for name in added},
        "measuring_budget_s": {name: matrix.profiles[name].measuring_budget for name in added},
        "unknown": [k.name for k in found if k.seconds is None],
        # A whole run of each profile as written, recorded on this project's host (docs/data).
        "recorded": {name: docsfigures.profile_time_said(name) for name in matrix.profiles},
    }


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def round_limit(name: str, plan: dict) -> str:
    """How far a profile's precision may go: its rounds, and its measuring budget where it has one."""
    budget = plan["measuring_budget_s"][name]
    within = f", within its measuring budget of {minutes(budget)}" if budget else ""
    return f"{name}: up to {plan['most_rounds'][name]} rounds{within}"


def hosted(plan: dict) -> str:
    """The app and its workloads, once where every profile hosts the same."""
    said = {name: f"{plan['apps'][name]} with {', '.join(plan['workloads'][name])}" for name in plan["profiles"]}
    if len(set(said.values())) == 1:
        return next(iter(said.values()))
    return "; ".join(f"{name}: {app}" for name, app in said.items())


def text(plan: dict) -> str:
    rounds = ", ".join(f"{name}: {count}" for name, count in plan["rounds"].items())
    lines = [
        f"serverbench plan: {', '.join(plan['profiles'])}",
        f"  servers ({len(plan['servers'])}): {', '.join(plan['servers'])}",
        f"  app: {hosted(plan)}",
        f"  lenses: {', '.join(['timed rounds', *plan['lenses']])}",
        f"  cells: {plan['cells']} in {rounds} round(s) (up to {plan['possible_cells']} where rounds are added)",
        f"  installs: {', '.join(plan['installs']) or 'none'}",
    ]
    for job in plan["jobs"]:
        each = "?" if job["seconds_each"] is None else f"{job['seconds_each']:.1f} s each"
        lines.append(f"  {job['name']}: {job['jobs']} job(s), {each} ({job['source']})")
    unknown = f", and {', '.join(plan['unknown'])} not known here" if plan["unknown"] else ""
    lines.append(f"  estimated: {minutes(plan['estimated_s'])} with the tables and the page{unknown}")
    if plan["most_s"] is not None:
        limits = ", ".join(round_limit(name, plan) for name in plan["most_rounds"])
        lines.append(f"  at most: {minutes(plan['most_s'])} if precision adds every round it may ({limits})")
    for name, said in plan["recorded"].items():
        if said:
            lines.append(f"  {name} as written: {said} (a recorded run, docs/data/profile-times.yaml)")
    return "\n".join(lines) + "\n"


def recorded_as_planned(args: argparse.Namespace) -> dict | None:
    """The profile's recorded whole run, where this plan runs it the same way: the shipped config,
    no config file of one's own, and the overrides the recorded run was shortened with, if any."""
    found = docsfigures.recorded_run(args.profile)
    if found is None or args.configfile or args.config != REPO_ROOT / "config.yaml":
        return None
    return {**found, "profile": args.profile} if sorted(args.overrides) == sorted(found["shortened"]) else None


def run(args: argparse.Namespace) -> int:
    try:
        config = load(args.config, args.configfile, args.profile, args.overrides)
    except (cfg.ConfigError, KeyError) as exc:
        sys.stderr.write(f"serverbench plan: {exc}\n")
        return 2
    results = args.results or (REPO_ROOT / str(config["results"]))
    plan = preview(config, results, recorded_as_planned(args))
    sys.stdout.write(json.dumps(plan, indent=2) + "\n" if args.json else text(plan))
    return 0
