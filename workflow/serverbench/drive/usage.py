"""Every ``serverbench`` command's usage: its help, its exit status, its arguments, and the module
that runs it (its ``run(args)``). Nothing here imports what the commands run (SciPy, pandas, the
config's checks), so ``serverbench --help`` builds the whole command line from this module alone
and ``serverbench.cli`` imports a command's module only when that command runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from serverbench import REPO_ROOT, registry


@dataclass(frozen=True)
class Command:
    """One command of ``serverbench``: what its usage says, and the module whose ``run`` runs it."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    runs: str  # a module's dotted name, imported only when the command runs
    exit_status: str | None = None


def config_file(text: str) -> Path:
    """A ``--configfile`` argument: a file (argparse says so where it is none)."""
    path = Path(text)
    if path.is_file():
        return path
    # --configfile takes every argument after it, so an override written after it lands here.
    hint = "; a KEY=VALUE override goes before --configfile" if "=" in text else ""
    raise argparse.ArgumentTypeError(f"no such file: {text}{hint}")


def config_arguments(parser: argparse.ArgumentParser) -> None:
    """The config a command reads, as a run reads it (``drive.configfiles``)."""
    parser.add_argument("--config", type=Path, default=REPO_ROOT / "config.yaml", help="the config to read")
    parser.add_argument(
        "--configfile",
        type=config_file,
        nargs="+",
        default=[],
        metavar="FILE",
        help="config files of one's own (mine.yaml), merged over it in order as snakemake --configfile merges them",
    )


# serverbench list
LISTS = ("lenses", "profiles", "servers", "apps", "checks")


def list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="?", choices=LISTS, help="one list (every list, briefly, if left out)")
    config_arguments(parser)
    parser.add_argument("--json", action="store_true", help="as JSON, for a program")


# serverbench plan
def plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", help="a profile of config.yaml (serverbench list profiles)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="as snakemake --config takes them")
    config_arguments(parser)
    parser.add_argument("--results", type=Path, default=None, help="earlier runs' results (default: config's)")
    parser.add_argument("--json", action="store_true", help="as JSON, for a program")


# serverbench compare
class Inconclusive(StrEnum):
    """What ``compare --fail-above`` does when the runs cannot tell."""

    REPORT = "report"  # exit 3, said so
    PASS = "pass"  # exit 0
    FAIL = "fail"  # exit 1


def share(text: str) -> float:
    """``5%`` or ``0.05``: a share."""
    return float(text.rstrip("%")) / 100 if text.endswith("%") else float(text)


def compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", type=Path, help="the baseline result set (a results directory)")
    parser.add_argument("b", type=Path, help="the result set compared with it")
    parser.add_argument(
        "--metric",
        choices=["work", "speed"],
        default=None,
        help="work per request (the default where both runs counted it: results/work.csv) or speed",
    )
    parser.add_argument("--format", choices=["table", "csv", "markdown", "json"], default="table")
    parser.add_argument("--fail-above", type=share, default=None, metavar="SHARE", help="e.g. 5%% or 0.05")
    parser.add_argument(
        "--inconclusive",
        choices=[choice.value for choice in Inconclusive],  # the words, where argparse names them
        default=Inconclusive.REPORT.value,
        help="with --fail-above, when the runs cannot tell: exit 3 (report, the default), 0 (pass) or 1 (fail)",
    )
    parser.add_argument("--config", type=Path, default=REPO_ROOT / "config.yaml", help="whose comparisons section")
    parser.add_argument(
        "--normalise",
        choices=["host", "ceiling"],
        default="host",
        help="speed: each run by its host's full speed (the steadiness check's; the ceiling where a run has"
        " none), or by its ceiling server's",
    )
    parser.add_argument(
        "--across-hosts",
        action="store_true",
        help="speed: compare runs made on different hosts (CPU model or kernel)",
    )


# serverbench seeds
def seeds_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", type=Path, help="a results directory (runs.csv, summary.csv, verdicts.csv)")
    parser.add_argument("--format", choices=["markdown", "csv"], default="markdown")
    parser.add_argument("--claims", action="store_true", help="with --format csv: the claims, not the side by side")


# serverbench bisect
def bisect_checks(config: Mapping | None = None) -> tuple[str, ...]:
    """Every check bisect takes: those the lenses offer a release is judged on, and the releases
    lens's own (conformance's), as its ``Lens.bisection`` declares them."""
    found = registry.lenses(config)
    own = [name for lens in found if lens.bisection for name in lens.bisection.own_checks]
    return (*(check.name for check in registry.offered_checks(found) if check.judged), *own)


def bisect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("server", help="a catalogue server of config `releases` (gunicorn-gthread)")
    parser.add_argument("good", help="the older release (the check as it was)")
    parser.add_argument("bad", help="the newer release (the check changed)")
    parser.add_argument("--check", required=True, choices=bisect_checks(), help="the check that differs")
    parser.add_argument("--out", type=Path, default=Path("results-bisect"), help="where each step's run goes")
    parser.add_argument("--profile", default="releases", help="whose settings each step runs with")
    config_arguments(parser)
    parser.add_argument("--cores", type=int, default=4)


# serverbench docs
def docs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where a figure differs")


COMMANDS = {
    "list": Command(
        "list the lenses, profiles, servers, apps and checks this checkout has (from config and the lens registry)",
        list_arguments,
        "serverbench.drive.listing",
    ),
    "plan": Command(
        "what a run of a profile will do (servers, lenses, jobs, cells, rounds, installs) and its time here",
        plan_arguments,
        "serverbench.drive.preview",
    ),
    "compare": Command(
        "two result sets server by server, on work per request or speed; --fail-above for CI",
        compare_arguments,
        "serverbench.drive.compare",
        exit_status=(
            "exit status: 0, or with --fail-above SHARE: 1 when a server is shown worse by more than SHARE, 0 when"
            " every one is shown within it, 3 when the runs cannot tell (the change each could have shown is"
            " printed; --inconclusive pass|fail turns it into 0 or 1); 2: a usage error"
        ),
    ),
    "seeds": Command(
        "the seed studies side by side with a run, and their claims judged in it",
        seeds_arguments,
        "serverbench.report.seeds",
    ),
    "bisect": Command(
        "the first release of a server whose check changed, measured in pairs (PyPI lists the releases)",
        bisect_arguments,
        "serverbench.drive.bisect",
        exit_status=(
            "exit status: 0 the release named; 3 the two releases given do not differ on the check; 2 a usage error"
        ),
    ),
    "docs": Command(
        "write the figures the docs quote from docs/data/ (make docs); --check: exit 1 where one differs",
        docs_arguments,
        "serverbench.drive.docsfigures",
    ),
}
