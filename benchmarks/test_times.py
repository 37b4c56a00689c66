"""Each test file's time in a pytest run, from its JUnit XML (``make test`` writes two:
``.test-times-paired.xml`` for the tests run two at a time, ``.test-times-serial.xml`` for those
run alone after them): the table docs/development.md quotes, slowest first, with each file's set
and the run's total (the sets' wall times added).

    .venv/bin/python benchmarks/test_times.py [XML ...] [--markdown] [--write]

``--write`` keeps the table in docs/data/test-times.csv, which docs/development.md shows
(`serverbench docs`), so the doc's figures are the run's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pandas as pd
from serverbench.files import write_atomic

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "docs" / "data" / "test-times.csv"


# make test's two sets, as the Makefile names their XML files.
XML_FILES = (Path(".test-times-paired.xml"), Path(".test-times-serial.xml"))


def file_times(paths: list[Path]) -> tuple[dict[str, float], dict[str, int], dict[str, str], float]:
    """Seconds and tests per test file (setup, call and teardown of each test), the set each
    file ran in (its XML's name), and the run's wall time (the sets one after the other)."""
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    sets: dict[str, str] = {}
    total = 0.0
    for path in paths:
        root = ET.parse(path).getroot()
        suite = root if root.tag == "testsuite" else root.find("testsuite")
        total += float(suite.get("time", 0))
        for case in suite.iter("testcase"):
            module = case.get("classname", "").split(".")[-1] if case.get("classname") else "?"
            name = f"{module}.py"
            seconds[name] += float(case.get("time", 0))
            counts[name] += 1
            sets[name] = path.stem.removeprefix(".test-times-")
    return dict(seconds), dict(counts), sets, total


def shown(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def rows(seconds: dict[str, float], counts: dict[str, int], sets: dict[str, str], total: float) -> list[dict]:
    """Slowest first, then the run: the table as docs/development.md shows it."""
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    found = [{"file": f"`{name}`", "tests": counts[name], "set": sets[name], "seconds": round(spent, 1),
              "time": shown(spent)} for name, spent in ranked]  # fmt: skip
    run = {"file": "all", "tests": sum(counts.values()), "set": "", "seconds": round(total, 1), "time": shown(total)}
    return [*found, run]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", nargs="*", default=list(XML_FILES), type=Path)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--write", action="store_true", help="keep it in docs/data and rewrite the docs")
    args = parser.parse_args()
    seconds, counts, sets, total = file_times(args.xml)
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    table = rows(seconds, counts, sets, total)
    if args.write:
        write_atomic(DATA, pd.DataFrame(table).to_csv(index=False))
        subprocess.run([sys.executable, "-m", "serverbench.cli", "docs"], cwd=REPO, check=True)
    if args.markdown:
        print("| file | tests | set | time |\n| --- | --- | --- | --- |")
        for row in table:
            print(f"| {row['file']} | {row['tests']} | {row['set']} | {row['time']} |")
        return
    for name, spent in ranked:
        print(f"{spent:8.1f} s  {counts[name]:4d}  {sets[name]:6}  {name}")
    print(f"{total:8.1f} s  {sum(counts.values()):4d}  (the run)")


if __name__ == "__main__":
    main()
