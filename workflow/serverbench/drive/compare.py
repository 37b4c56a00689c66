"""``serverbench compare A B``: two result sets side by side, server by server, on work
per request (where both runs counted it) or on speed; the judging is
``serverbench.decide.compare`` (speed) and the work lens's (its ``Lens.between_runs``, found
through the registry: compare names no lens), this module reads the command line and writes
what they found for a reader.

Its first line (on stderr) says which metric it judges by and why. ``--fail-above 5%`` exits 1
when some server is shown worse by more than 5%, 0 when every one is shown within 5%, and 3
when the runs cannot tell (2: a usage error); ``--inconclusive pass|fail`` makes a CI job treat
"cannot tell" as it chooses (exit 0 or 1, said so). ``--format json`` writes the metric, the
status, its reason and every row."""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from serverbench import registry
from serverbench.decide import compare
from serverbench.drive.usage import Inconclusive
from serverbench.lens import RunComparison
from serverbench.plan import config as cfg

INCONCLUSIVE = {Inconclusive.REPORT: None, Inconclusive.PASS: 0, Inconclusive.FAIL: compare.EXIT_REGRESSION}
SPEED_COLUMNS = [*compare.MATCH, "ratio", "ci_low", "ci_high", "p_holm", "detectable_drop", "outcome", "why"]


def render(table: pd.DataFrame, form: str) -> str:
    """compare's speed table as csv, a markdown table or plain text."""
    if form == "csv":
        return table.to_csv(index=False)
    shown = table.copy()
    for column in ("ratio", "ci_low", "ci_high"):
        shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    shown["p_holm"] = shown["p_holm"].map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
    shown["detectable_drop"] = shown["detectable_drop"].map(lambda v: "" if pd.isna(v) else f"{v:.0%}")
    if form == "markdown":
        return shown[SPEED_COLUMNS].fillna("").to_markdown(index=False, disable_numparse=True) + "\n"
    return shown[SPEED_COLUMNS].fillna("").to_string(index=False) + "\n"


def counted(config) -> RunComparison:
    """What the lens that compares two runs on a figure it counts declares for compare (work's)."""
    found = [lens.between_runs for lens in registry.lenses(config) if lens.between_runs is not None]
    if len(found) != 1:
        raise LookupError(f"compare needs one lens that compares two runs on a counted figure, there are {len(found)}")
    return found[0]


def render_counted(table: pd.DataFrame, form: str, title: str) -> str:
    """The counted comparison's table (work's) as csv, a markdown table or plain text."""
    if form == "csv":
        return table.to_csv(index=False)
    title += "\n"
    if form == "markdown":
        return title + "\n" + table.fillna("").to_markdown(index=False, floatfmt=".4f") + "\n"
    return title + table.fillna("").to_string(index=False, float_format=lambda v: f"{v:.4f}") + "\n"


def _status(args: argparse.Namespace, found: tuple[int, str] | None) -> tuple[int, str | None]:
    """The exit status and its reason (none without --fail-above), "cannot tell" turned as asked."""
    if found is None:
        return 0, None
    status, why = found
    turned = INCONCLUSIVE[args.inconclusive]
    if status == compare.EXIT_CANNOT_TELL and turned is not None:
        return turned, f"{why} (--inconclusive {args.inconclusive}: exit {turned})"
    return status, why


def _finish(args: argparse.Namespace, metric: str, table: pd.DataFrame, found, text: str) -> int:
    """The table as asked (json: with the metric and the status), the reason on stderr, the status."""
    status, why = _status(args, found)
    if args.format == "json":
        rows = json.loads(table.to_json(orient="records"))
        sys.stdout.write(json.dumps({"metric": metric, "status": status, "why": why, "rows": rows}, indent=2) + "\n")
    else:
        sys.stdout.write(text)
    if why:
        sys.stderr.write(f"serverbench compare: {why}\n")
    return status


def run_counted(args: argparse.Namespace, config: dict, lens: RunComparison) -> int:
    """compare --metric work: each server's change in the counted figure (work per request), B/A."""
    if not (lens.present(args.a) and lens.present(args.b)):
        sys.stderr.write(f"serverbench compare: --metric {lens.metric} needs results/{lens.table} in both runs\n")
        return 2
    table = lens.compare(args.a, args.b, config, args.fail_above)
    found = None if args.fail_above is None else lens.exit_status(table, args.fail_above)
    text = "" if args.format == "json" else render_counted(table, args.format, lens.title)
    return _finish(args, lens.metric, table, found, text)


def run_speed(args: argparse.Namespace, config: dict) -> int:
    """compare --metric speed: each cell's change in full speed (or delivered req/s), B/A."""
    try:
        a, b = compare.read_set(args.a), compare.read_set(args.b)
    except compare.MissingTable as exc:
        sys.stderr.write(f"serverbench compare: {exc}\n")
        return 2
    hosts = compare.host_differences(a.environment, b.environment)
    if hosts and not args.across_hosts:
        sys.stderr.write(
            "serverbench compare: the runs were made on different hosts, a different condition:\n"
            + "".join(f"  {line}\n" for line in hosts)
            + "a ratio between servers moves between machines beyond a run's interval; --across-hosts compares"
            " them anyway\n"
        )
        return compare.EXIT_CANNOT_TELL
    table = compare.compare_sets(a, b, config, args.fail_above, args.normalise)
    differences = compare.environment_differences(a.environment, b.environment)
    text = ""
    if differences and args.format in ("table", "markdown"):
        text += "Environments differ:\n" + "".join(f"  {line}\n" for line in differences) + "\n"
    controls = compare.control_outcomes(args.a, "A") + compare.control_outcomes(args.b, "B")
    if controls and args.format in ("table", "markdown"):
        text += "A/A control (the same server twice in one run):\n" + "".join(f"  {c}\n" for c in controls) + "\n"
    text += "" if args.format == "json" else render(table, args.format)
    found = None if args.fail_above is None else compare.exit_status(table, args.fail_above)
    return _finish(args, "speed", table, found, text)


def metric_and_why(args: argparse.Namespace, lens: RunComparison) -> tuple[str, str]:
    """Which metric compare judges by, and why: the one asked, else the counted one (work) where
    both runs counted it (instructions are counted, so two runs of one commit agree within a
    fraction of a per cent), else speed."""
    if args.metric:
        return args.metric, f"--metric {args.metric}"
    holding = [side for side, path in (("A", args.a), ("B", args.b)) if lens.present(path)]
    if len(holding) == 2:
        return lens.metric, f"both runs counted it (results/{lens.table}); --metric speed judges by speed"
    lacking = " and ".join(side for side in ("A", "B") if side not in holding)
    return "speed", f"{lacking} counted no {lens.figure} (no results/{lens.table})"


def run(args: argparse.Namespace) -> int:
    """``serverbench compare A B``: on work where both runs counted it (or ``--metric``), else speed."""
    config = cfg.load(args.config)
    lens = counted(config)
    metric, why = metric_and_why(args, lens)
    words = lens.figure if metric == lens.metric else "speed"
    sys.stderr.write(f"serverbench compare: judging by {words}: {why}\n")
    return run_counted(args, config, lens) if metric == lens.metric else run_speed(args, config)
