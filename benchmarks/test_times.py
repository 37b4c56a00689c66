"""Each test file's time in a pytest run, from its JUnit XML (``make test`` writes
``.test-times.xml``): the table docs/development.md quotes, slowest first, with the run's total.

    .venv/bin/python benchmarks/test_times.py [.test-times.xml] [--markdown] [--write]

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

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "docs" / "data" / "test-times.csv"


def file_times(path: Path) -> tuple[dict[str, float], dict[str, int], float]:
    """Seconds and tests per test file (setup, call and teardown of each test), and the run's wall time."""
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in suite.iter("testcase"):
        module = case.get("classname", "").split(".")[-1] if case.get("classname") else "?"
        name = f"{module}.py"
        seconds[name] += float(case.get("time", 0))
        counts[name] += 1
    return dict(seconds), dict(counts), float(suite.get("time", 0))


def shown(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def rows(seconds: dict[str, float], counts: dict[str, int], total: float) -> list[dict]:
    """Slowest first, then the run: the table as docs/development.md shows it."""
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    found = [{"file": f"`{name}`", "tests": counts[name], "seconds": round(spent, 1), "time": shown(spent)}
             for name, spent in ranked]  # fmt: skip
    return [*found, {"file": "all", "tests": sum(counts.values()), "seconds": round(total, 1), "time": shown(total)}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", nargs="?", default=".test-times.xml", type=Path)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--write", action="store_true", help="keep it in docs/data and rewrite the docs")
    args = parser.parse_args()
    seconds, counts, total = file_times(args.xml)
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    if args.write:
        DATA.write_text(pd.DataFrame(rows(seconds, counts, total)).to_csv(index=False))
        subprocess.run([sys.executable, "-m", "serverbench.cli", "docs"], cwd=REPO, check=True)
    if args.markdown:
        print("| file | tests | time |\n| --- | --- | --- |")
        for row in rows(seconds, counts, total):
            print(f"| {row['file']} | {row['tests']} | {row['time']} |")
        return
    for name, spent in ranked:
        print(f"{spent:8.1f} s  {counts[name]:4d}  {name}")
    print(f"{total:8.1f} s  {sum(counts.values()):4d}  (the run)")


if __name__ == "__main__":
    main()
