"""How long must a cell of the apps profile warm up? Each cell starts its server
anew, verifies every path (so each framework has compiled its templates and
opened its database connections once), warms up, then measures. Here the apps
profile's cells run with no warm-up and 2 s of load, read in the record's 50 ms
windows: if the answers per second in 0.5-1.0 s of load match those of 1.0-2.0
s, half a second of warm-up leaves nothing for the measured second to see.

Printed per cell and per server: the rate of 0-0.5 s (first window dropped: it
starts mid-window) and of 0.5-1.0 s, each as a ratio to the rate of 1-2 s,
and the medians over every cell. The product's own cells (``run_cell``): the
database template comes from an earlier apps run (``--results``, where
``databases/`` is). Run it alone on the machine.

    PYTHONPATH=workflow .venv/bin/python benchmarks/warmup_length.py --results DIR [--rounds 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from serverbench import REPO_ROOT
from serverbench.cell.phases import run_cell
from serverbench.plan import config as cfg
from serverbench.plan.shapes import Cell

CONDITIONS = [("apps-flask", s) for s in ("gunicorn-gthread", "uwsgi-debian", "unit-python", "mod_wsgi")]
CONDITIONS += [("apps-dancer2", s) for s in ("starman", "uwsgi-psgi", "unit-perl", "starlet")]
CONDITIONS += [("apps-django", s) for s in ("gunicorn-gthread", "mod_wsgi")]
CONDITIONS += [("apps-mojolicious", s) for s in ("starman", "unit-perl")]
WORKLOADS = ("plaintext", "db", "fortunes")
WINDOWS_PER_HALF_SECOND = 10  # of the record's 50 ms windows


def ratios(record: dict) -> dict | None:
    """The rates of 0-0.5 s and 0.5-1 s of load as ratios to that of 1-2 s (None: too few windows)."""
    windows = record.get("windows") or {}
    answers, durations = windows.get("answers") or [], windows.get("durations_s") or []
    half = WINDOWS_PER_HALF_SECOND
    if record["status"] != "ok" or len(answers) < 4 * half - 2:
        return None

    def rate(start: int, end: int) -> float:
        return sum(answers[start:end]) / sum(durations[start:end])

    late = rate(2 * half, 4 * half)
    return {"first_half_s": rate(1, half) / late, "second_half_s": rate(half, 2 * half) / late, "late_rps": late}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", required=True, help="an apps run's results (its databases/ templates)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    config = cfg.load(REPO_ROOT / "config.yaml")
    config.update(profile="apps", results=args.results)
    for profile in {profile for profile, _ in CONDITIONS}:
        config["profiles"][profile].update(warmup=0, duration=2)
    scratch, rows = Path(tempfile.mkdtemp(prefix="warmup-length-")), []
    for repeat in range(1, args.rounds + 1):
        for profile, server in CONDITIONS:
            for workload in WORKLOADS:
                base = scratch / f"{profile}-{server}-{workload}-{repeat}"
                cell = Cell(profile, "wrk", server, 2, repeat, workload)
                record = run_cell(config, cell, f"{base}.json", f"{base}.load.txt", f"{base}.server.log")
                found = ratios(record)
                row = {"profile": profile, "server": server, "workload": workload, "repeat": repeat}
                row.update(found or {"status": record["status"], "reason": record["reason"]})
                rows.append(row)
                print(json.dumps(row), flush=True)
    measured = [row for row in rows if "late_rps" in row]
    for server in dict.fromkeys(server for _, server in CONDITIONS):
        own = [row for row in measured if row["server"] == server]
        if own:
            first = statistics.median(row["first_half_s"] for row in own)
            second = statistics.median(row["second_half_s"] for row in own)
            print(f"{server:18} 0-0.5 s {first:.3f}  0.5-1 s {second:.3f}  of 1-2 s ({len(own)} cells)")
    for key in ("first_half_s", "second_half_s"):
        print(f"every cell, {key}: median {statistics.median(row[key] for row in measured):.3f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
