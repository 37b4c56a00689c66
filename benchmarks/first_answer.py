"""A newcomer's first hour, timed: a fresh clone's `make bench` from its first command to the
first answer it prints (the work lens's, results/work_counted.txt), with the install's share and
the whole run's end beside it. Recorded in docs/data/first-answer.csv (the README's "first
answer" figure; issue 97 asks for it within 15 minutes on a fresh machine).

    python3 benchmarks/first_answer.py              # prints the row
    python3 benchmarks/first_answer.py --write      # and appends it to the CSV

It needs only Python's standard library, so it runs on a fresh machine before any venv exists.

The clone is made beside this checkout (so ../shared/vendor gives it Unit's source, as the
README's set-up does); its venv and results are its own. On a machine where the install has
run before, the system packages and the builds under /opt/serverbench are already there: the
row says which (`machine`: fresh or installed), so only a fresh machine's row answers the issue.
Run it alone: it is the 2 CPUs' experiment.
"""

import argparse
import csv
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "docs" / "data" / "first-answer.csv"
FIELDS = ("date", "commit", "cpu", "machine", "install_min", "first_answer_min", "run_end_min", "exit")
# What scripts/install prints once the install is done and the workflow starts.
WORKFLOW_STARTED = "Building DAG of jobs"
# What the work lens's rule prints as it writes results/work_counted.txt.
FIRST_ANSWER = "the work lens has answered"


def head_commit() -> str:
    """The checkout's commit (short), which the row names."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip()


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def machine_state() -> str:
    """fresh: nothing the install builds is here yet; installed: an earlier install's builds are."""
    return "installed" if Path("/opt/serverbench").exists() else "fresh"


def timed_bench(clone: Path, log: Path) -> dict:
    """Runs `make bench` in ``clone``, watching its output and its results for the first answer."""
    machine = machine_state()
    started = time.monotonic()
    marks: dict[str, float] = {}
    answer = clone / "results" / "work_counted.txt"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["make", "bench"], cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for line in process.stdout:
            out.write(line)
            now = time.monotonic() - started
            if WORKFLOW_STARTED in line:
                marks.setdefault("install", now)
            if FIRST_ANSWER in line or answer.exists():
                marks.setdefault("first_answer", now)
        code = process.wait()
    end = time.monotonic() - started
    if answer.exists():
        marks.setdefault("first_answer", end)
    return {
        "machine": machine,
        "install_min": round(marks["install"] / 60, 1) if "install" in marks else None,
        "first_answer_min": round(marks["first_answer"] / 60, 1) if "first_answer" in marks else None,
        "run_end_min": round(end / 60, 1),
        "exit": code,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"append the row to {DATA.relative_to(REPO)}")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its results and log)")
    args = parser.parse_args()
    clone = REPO.parent / "first-answer-clone"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    log = REPO.parent / "first-answer.log"
    row = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": head_commit(),
        "cpu": cpu_model(),
        **timed_bench(clone, log),
    }
    print(", ".join(f"{key} {value}" for key, value in row.items()), f"(log: {log})")
    if args.write:
        new = not DATA.exists()
        with DATA.open("a", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=FIELDS)
            if new:
                writer.writeheader()
            writer.writerow(row)
    if not args.keep:
        shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
