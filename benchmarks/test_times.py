"""Each test file's time in a pytest run, from its JUnit XML (``make test`` writes
``.test-times.xml``): the table docs/development.md quotes, slowest first, with the run's total.

    .venv/bin/python benchmarks/test_times.py [.test-times.xml] [--markdown]
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", nargs="?", default=".test-times.xml", type=Path)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    seconds, counts, total = file_times(args.xml)
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    if args.markdown:
        print("| file | tests | time |\n| --- | --- | --- |")
        for name, spent in ranked:
            print(
                f"| `{name}` | {counts[name]} | {spent / 60:.1f} min |"
                if spent >= 60
                else f"| `{name}` | {counts[name]} | {spent:.0f} s |"
            )
        print(f"| all | {sum(counts.values())} | {total / 60:.1f} min |")
        return
    for name, spent in ranked:
        print(f"{spent:8.1f} s  {counts[name]:4d}  {name}")
    print(f"{total:8.1f} s  {sum(counts.values()):4d}  (the run)")


if __name__ == "__main__":
    main()
