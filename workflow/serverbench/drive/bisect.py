"""``serverbench bisect SERVER GOOD BAD --check CHECK``: the first release of a server whose
check differs from the release before it, found by measuring releases in pairs.

The releases between GOOD and BAD are those its package's source lists (its index's simple
JSON API, PEP 691 — PyPI's unless ``index_url`` names another —, or the wheels of its
``find_links`` directory), final releases only, a release whose every file is yanked left out. Every step is one run of
the workflow (a profile ``bisect``: the ``releases`` profile's settings, with only the lens
the check needs, two releases side by side) whose release_verdicts.csv says whether the newer
of the two changed the check from the older, by that lens's rule (its ``Lens.bisection``: bisect names no lens). The
first run measures GOOD against BAD: the change must be seen there, its direction is the one
looked for. Then the range halves until two neighbouring releases are left; the last step
measures those two, so the change named is one release's, with its figures. A release that
cannot be measured (its install failed: the step's releases.csv says why) is skipped, as
``git bisect skip`` does, and the nearest one to the middle measured instead.

Exit status: 0 the release named; 3 GOOD and BAD do not differ on the check (nothing to look
for, the outcome printed); 4 the change lies among releases some of which could not be
measured (each named, with why); 2 a usage error (an unknown server or check, too few
releases).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import yaml
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from serverbench import REPO_ROOT, files, registry
from serverbench.drive import configfiles
from serverbench.lens import Bisection
from serverbench.plan import config as cfg
from serverbench.plan.releases import distribution_of, package_of, release_name
from serverbench.record.vocabulary import Outcome, Status

PROFILE = "bisect"
PYPI_SIMPLE = "https://pypi.org/simple"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"  # PEP 691


class BisectError(ValueError):
    """A usage error: said to the user, exit 2."""


def bisection(config) -> Bisection:
    """What the lens that judges a release against the one before it declares for bisect."""
    found = [lens.bisection for lens in registry.lenses(config) if lens.bisection is not None]
    if len(found) != 1:
        raise BisectError(f"bisect needs one lens that judges releases, the run has {len(found)}")
    return found[0]


@dataclass
class Step:
    """One run: the newer release against the older on the check."""

    older: str
    newer: str
    results: str
    outcome: str | None
    sentence: str | None
    # Why the newer release could not be measured, where it could not (its install's status).
    reason: str | None = None


def listed_versions(package: str, spec: dict) -> list[str]:
    """Every final release the package's source offers (its wheel directory, else its index)."""
    if spec.get("find_links"):
        names = [path.name for path in Path(spec["find_links"]).iterdir()]
    else:
        names = _index_files(distribution_of(package, spec), spec.get("index_url") or PYPI_SIMPLE)
    found = {version for version in map(_version_of, names) if version is not None}
    return [str(v) for v in sorted(v for v in found if not v.is_prerelease and not v.is_devrelease)]


def _version_of(filename: str) -> Version | None:
    """A wheel's or sdist's version, None for any other file."""
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def _index_files(distribution: str, index_url: str) -> list[str]:
    """The files an index's simple JSON API (PEP 691) lists for a distribution, the yanked left out."""
    url = f"{index_url.rstrip('/')}/{canonicalize_name(distribution)}/"
    request = urllib.request.Request(url, headers={"Accept": SIMPLE_JSON})
    with urllib.request.urlopen(request, timeout=30) as answer:
        listed = json.load(answer)["files"]
    return [file["filename"] for file in listed if not file.get("yanked")]


def between(versions: list[str], good: str, bad: str) -> list[str]:
    """GOOD, the releases after it and before BAD, and BAD (oldest first)."""
    low, high = Version(good), Version(bad)
    inner = [v for v in versions if low < Version(v) < high]
    return [good, *inner, bad]


def overlay(config: dict, server: str, pair: list[str], check: str, base_profile: str) -> dict:
    """The config a step adds to config.yaml: a profile of the two releases and only the
    lens the check needs (the lens that offers it; the releases lens's own, by its config key)."""
    profile = dict(cfg.requested_profile(config, base_profile))
    profile.update(description=f"serverbench bisect: {check} of {server}", servers=pair)
    for lens in registry.lenses(config):
        if lens.profile_key is None:
            continue
        if check in {offered.name for offered in lens.checks if offered.judged}:
            profile.setdefault(lens.profile_key, True)
        else:
            profile.pop(lens.profile_key, None)
    own = bisection(config).own_checks
    return {"profiles": {PROFILE: profile}, **{key: check == name for name, key in own.items()}}


def run_step(args, config: dict, pair: list[str], number: int) -> Step:
    results = Path(args.out) / f"step-{number}"
    results.mkdir(parents=True, exist_ok=True)
    extra = results / "bisect.yaml"
    extra.write_text(yaml.safe_dump(overlay(config, args.server, pair, args.check, args.profile)))
    argv = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "--configfile", str(args.config),
            *map(str, args.configfile), str(extra), "--config", f"profile={PROFILE}", f"results={results}",
            "--", str(results / bisection(config).verdicts)]  # fmt: skip
    with (results / "snakemake.log").open("w") as log:
        done = subprocess.run(argv, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise BisectError(f"the workflow failed for {' and '.join(pair)} (see {results / 'snakemake.log'})")
    read = bisection(config)
    verdicts = pd.read_csv(results / read.verdicts)
    mine = verdicts[(verdicts["release"] == pair[1]) & (verdicts["relation"] == read.previous)]
    mine = mine[mine["check"] == args.check]
    if mine.empty:
        return Step(pair[0], pair[1], str(results), None, None, _not_measured(results, pair[1], read))
    row = mine.iloc[0]
    sentence = read.sentence(row, registry.offered_checks(registry.lenses(config)))
    return Step(pair[0], pair[1], str(results), str(row["outcome"]), sentence)


def _not_measured(results: Path, release: str, read: Bisection) -> str:
    """Why a step's release has no verdict: its install's status and reason, where it failed."""
    table = results / read.table
    if table.exists() and table.stat().st_size:
        rows = pd.read_csv(table)
        installed = rows[(rows["release"] == release) & (rows["check"] == read.installed)]
        if not installed.empty and installed.iloc[0]["status"] != Status.OK:
            return f"its install {installed.iloc[0]['status']}: {installed.iloc[0]['reason']}"
    return "the check has no verdict for it"


def next_middle(low: int, high: int, skipped: set[int]) -> int | None:
    """The release to measure next between ``low`` and ``high``: the middle one, else (skipped)
    the nearest to it that can still be measured; None where none is left."""
    left = [index for index in range(low + 1, high) if index not in skipped]
    middle = (low + high) // 2
    return min(left, key=lambda index: (abs(index - middle), index)) if left else None


def steps_left(low: int, high: int) -> int:
    """Steps a bisection of releases ``low``..``high`` may still take at most: a halving for
    each power of two between them, and the pair it ends on measured side by side (a release
    that does not install adds one)."""
    return math.ceil(math.log2(high - low)) + 1 if high > low else 0


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class Progress:
    """A line when a step starts (the pair, the steps that may follow, the time they may take at
    the pace of the steps so far) and when it ends (its outcome, its time): a step is a workflow
    run of minutes, and a bisect of several should not be silent until the last."""

    def __init__(self):
        self.seconds: list[float] = []

    def run(self, args, config: dict, pair: list[str], number: int, left: int) -> Step:
        pace = sum(self.seconds) / len(self.seconds) if self.seconds else None
        after = f"; at most {left} more" + (f", about {_duration(left * pace)}" if pace else "") if left else ""
        print(f"bisect step {number}: {pair[1]} against {pair[0]}{after}", flush=True)
        started = time.monotonic()
        step = run_step(args, config, pair, number)
        self.seconds.append(time.monotonic() - started)
        print(f"bisect step {number}: {step.outcome or 'not measured'} ({self.seconds[-1]:.0f} s)", flush=True)
        return step


def bisect(args, config: dict, candidates: list[str]) -> tuple[int, list[Step], list[str]]:
    """Halve [GOOD, BAD] until the release that changed the check is one step from the one
    before it, skipping a release that cannot be measured; (exit status, the steps run, and
    where releases were skipped the releases the change could be in)."""
    names = [release_name(args.server, version) for version in candidates]
    progress = Progress()
    steps = [progress.run(args, config, [names[0], names[-1]], 0, steps_left(0, len(names) - 1))]
    wanted = steps[0].outcome
    if wanted is None:
        raise BisectError(f"{names[-1]} against {names[0]} could not be measured: {steps[0].reason}")
    if wanted not in bisection(config).changed:
        return 3, steps, []
    low, high, skipped = 0, len(names) - 1, set()
    while (middle := next_middle(low, high, skipped)) is not None:
        left = max(steps_left(low, middle), steps_left(middle, high))
        steps.append(progress.run(args, config, [names[low], names[middle]], len(steps), left))
        if steps[-1].outcome is None:  # could not be measured: skipped, another measured instead
            skipped.add(middle)
            continue
        low, high = (low, middle) if steps[-1].outcome == wanted else (middle, high)
    if any(low < index < high for index in skipped):
        return 4, steps, [names[index] for index in range(low + 1, high + 1)]
    measured = [(s.older, s.newer) for s in steps if s.outcome is not None]
    if (names[low], names[high]) != measured[-1]:
        steps.append(progress.run(args, config, [names[low], names[high]], len(steps), 0))
    return 0, steps, []


def run(args: argparse.Namespace) -> int:
    try:
        config = configfiles.load(args.config, args.configfile)
        package = package_of(config, args.server)
        if package is None:
            raise BisectError(f"{args.server!r} is not a server of any package in config `releases`")
        candidates = between(listed_versions(package, config["releases"][package]), args.good, args.bad)
        status, steps, could_be = bisect(args, config, candidates)
    except (BisectError, cfg.ConfigError) as exc:
        sys.stderr.write(f"serverbench bisect: {exc}\n")
        return 2
    for step in steps:
        why = f": {step.reason}" if step.reason else ""
        print(f"{step.newer} against {step.older}: {step.outcome or 'not measured'}{why} ({step.results})")
        if step.outcome == Outcome.UNDETERMINED:  # taken as no change: the range went on past it
            print(f"  undetermined: taken as no change from {step.older}; a change there would be missed")
    last = [step for step in steps if step.outcome is not None][-1]
    if status == 0:
        print(f"First release that changed {args.check}: {last.newer}\n  {last.sentence}")
    elif status == 4:
        skipped = ", ".join(step.newer for step in steps if step.outcome is None)
        print(f"The first release that changed {args.check} is one of: {', '.join(could_be)} ({skipped} not measured)")
    else:
        print(f"{args.good} and {args.bad} do not differ on {args.check} ({steps[0].outcome}): nothing to look for")
    result = {"server": args.server, "check": args.check, "candidates": candidates, "status": status,
              "first_changed": last.newer if status == 0 else None, "could_be": could_be,
              "skipped": [s.newer for s in steps if s.outcome is None],
              "steps": [asdict(s) for s in steps]}  # fmt: skip
    files.write_json(Path(args.out) / "bisect.json", result)
    return status
