"""``serverbench bisect SERVER GOOD BAD --check CHECK``: the first release of a server whose
check differs from the release before it, found by measuring releases in pairs.

The releases between GOOD and BAD are those its package's source lists (PyPI's JSON API, or
the wheels of its ``find_links`` directory), final releases only. Every step is one run of
the workflow (a profile ``bisect``: the ``releases`` profile's settings, with only the lens
the check needs, two releases side by side) whose release_verdicts.csv says whether the newer
of the two changed the check from the older, by that lens's rule (``lenses.releases.decide``). The
first run measures GOOD against BAD: the change must be seen there, its direction is the one
looked for. Then the range halves until two neighbouring releases are left; the last step
measures those two, so the change named is one release's, with its figures.

Exit status: 0 the release named; 3 GOOD and BAD do not differ on the check (nothing to look
for, the outcome printed); 2 a usage error (an unknown server or check, too few releases).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import yaml
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from snakemake.utils import update_config

from serverbench import REPO_ROOT, files, registry
from serverbench.lenses.releases.decide import CHANGED, PREVIOUS
from serverbench.lenses.releases.report import change_sentence
from serverbench.lenses.releases.table import CONFORMANCE_CHECK as CONFORMANCE
from serverbench.plan import config as cfg
from serverbench.plan.releases import distribution_of, package_of, release_name
from serverbench.record.vocabulary import Outcome

HELP = "the first release of a server whose check changed, measured in pairs (PyPI lists the releases)"
EXIT_STATUS = "exit status: 0 the release named; 3 the two releases given do not differ on the check; 2 a usage error"
PROFILE = "bisect"
PYPI_JSON = "https://pypi.org/pypi/{distribution}/json"


class BisectError(ValueError):
    """A usage error: said to the user, exit 2."""


@dataclass
class Step:
    """One run: the newer release against the older on the check."""

    older: str
    newer: str
    results: str
    outcome: str | None
    sentence: str | None


def listed_versions(package: str, spec: dict) -> list[str]:
    """Every final release the package's source offers (its wheel directory, else PyPI)."""
    found = set()
    if spec.get("find_links"):
        for path in Path(spec["find_links"]).iterdir():
            try:
                version = parse_wheel_filename(path.name)[1] if path.suffix == ".whl" else None
                version = version or parse_sdist_filename(path.name)[1]
            except (InvalidWheelFilename, InvalidSdistFilename):
                continue
            found.add(version)
    else:
        url = PYPI_JSON.format(distribution=distribution_of(package, spec))
        with urllib.request.urlopen(url, timeout=30) as answer:
            releases = json.load(answer)["releases"]
        for text, uploads in releases.items():
            try:
                version = Version(text)
            except InvalidVersion:
                continue
            if uploads and not all(upload.get("yanked") for upload in uploads):
                found.add(version)
    return [str(v) for v in sorted(v for v in found if not v.is_prerelease and not v.is_devrelease)]


def between(versions: list[str], good: str, bad: str) -> list[str]:
    """GOOD, the releases after it and before BAD, and BAD (oldest first)."""
    low, high = Version(good), Version(bad)
    inner = [v for v in versions if low < Version(v) < high]
    return [good, *inner, bad]


def overlay(config: dict, server: str, pair: list[str], check: str, base_profile: str) -> dict:
    """The config a step adds to config.yaml: a profile of the two releases and only the
    lens the check needs (the lens that offers it; conformance is the core's)."""
    profile = dict(cfg.requested_profile(config, base_profile))
    profile.update(description=f"serverbench bisect: {check} of {server}", servers=pair)
    for lens in registry.lenses(config):
        if lens.profile_key is None:
            continue
        if check in {offered.name for offered in lens.checks if offered.judged}:
            profile.setdefault(lens.profile_key, True)
        else:
            profile.pop(lens.profile_key, None)
    return {"profiles": {PROFILE: profile}, "conformance": check == CONFORMANCE}


def checks(config: dict | None = None) -> tuple[str, ...]:
    """Every check bisect takes: those the lenses offer a release is judged on, and conformance's."""
    offered = registry.offered_checks(registry.lenses(config))
    return (*(check.name for check in offered if check.judged), CONFORMANCE)


def run_step(args, config: dict, pair: list[str], number: int) -> Step:
    results = Path(args.out) / f"step-{number}"
    results.mkdir(parents=True, exist_ok=True)
    extra = results / "bisect.yaml"
    extra.write_text(yaml.safe_dump(overlay(config, args.server, pair, args.check, args.profile)))
    argv = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "--configfile", str(args.config),
            *map(str, args.configfile), str(extra), "--config", f"profile={PROFILE}", f"results={results}",
            "--", str(results / "release_verdicts.csv")]  # fmt: skip
    with (results / "snakemake.log").open("w") as log:
        done = subprocess.run(argv, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise BisectError(f"the workflow failed for {' and '.join(pair)} (see {results / 'snakemake.log'})")
    verdicts = pd.read_csv(results / "release_verdicts.csv")
    mine = verdicts[(verdicts["release"] == pair[1]) & (verdicts["relation"] == PREVIOUS)]
    mine = mine[mine["check"] == args.check]
    if mine.empty:
        return Step(pair[0], pair[1], str(results), None, None)
    row = mine.iloc[0]
    sentence = change_sentence(row, registry.offered_checks(registry.lenses(config)))
    return Step(pair[0], pair[1], str(results), str(row["outcome"]), sentence)


def bisect(args, config: dict, candidates: list[str]) -> tuple[int, list[Step]]:
    """Halve [GOOD, BAD] until the release that changed the check is one step from the one
    before it; (exit status, the steps run)."""
    names = [release_name(args.server, version) for version in candidates]
    steps = [run_step(args, config, [names[0], names[-1]], 0)]
    wanted = steps[0].outcome
    if wanted not in CHANGED:
        return 3, steps
    low, high = 0, len(names) - 1
    while high - low > 1:
        middle = (low + high) // 2
        steps.append(run_step(args, config, [names[low], names[middle]], len(steps)))
        low, high = (low, middle) if steps[-1].outcome == wanted else (middle, high)
    if (names[low], names[high]) != (steps[-1].older, steps[-1].newer):
        steps.append(run_step(args, config, [names[low], names[high]], len(steps)))
    return 0, steps


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("server", help="a catalogue server of config `releases` (gunicorn-gthread)")
    parser.add_argument("good", help="the older release (the check as it was)")
    parser.add_argument("bad", help="the newer release (the check changed)")
    parser.add_argument("--check", required=True, choices=checks(), help="the check that differs")
    parser.add_argument("--out", type=Path, default=Path("results-bisect"), help="where each step's run goes")
    parser.add_argument("--profile", default="releases", help="whose settings each step runs with")
    parser.add_argument("--config", type=Path, default=REPO_ROOT / "config.yaml")
    parser.add_argument("--configfile", type=Path, nargs="*", default=[], help="config files of one's own, after it")
    parser.add_argument("--cores", type=int, default=4)


def _load(args) -> dict:
    config = cfg.read(args.config)
    for path in args.configfile:  # merged as snakemake merges --configfile
        update_config(config, yaml.safe_load(Path(path).read_text()) or {})
    return cfg.validate(config)


def run(args: argparse.Namespace) -> int:
    try:
        config = _load(args)
        package = package_of(config, args.server)
        if package is None:
            raise BisectError(f"{args.server!r} is not a server of any package in config `releases`")
        candidates = between(listed_versions(package, config["releases"][package]), args.good, args.bad)
        status, steps = bisect(args, config, candidates)
    except BisectError as exc:
        sys.stderr.write(f"serverbench bisect: {exc}\n")
        return 2
    for step in steps:
        print(f"{step.newer} against {step.older}: {step.outcome or 'not measured'} ({step.results})")
        if step.outcome == Outcome.UNDETERMINED:  # taken as no change: the range went on past it
            print(f"  undetermined: taken as no change from {step.older}; a change there would be missed")
    last = steps[-1]
    if status == 0:
        print(f"First release that changed {args.check}: {last.newer}\n  {last.sentence}")
    else:
        print(f"{args.good} and {args.bad} do not differ on {args.check} ({steps[0].outcome}): nothing to look for")
    result = {"server": args.server, "check": args.check, "candidates": candidates, "status": status,
              "first_changed": last.newer if status == 0 else None, "steps": [asdict(s) for s in steps]}  # fmt: skip
    files.write_json(Path(args.out) / "bisect.json", result)
    return status
