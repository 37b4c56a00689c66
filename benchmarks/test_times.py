"""Each test file's time in a pytest run, from its JUnit XML (``make test`` writes two:
``.test-times-paired.xml`` for the tests run two at a time, ``.test-times-serial.xml`` for those
run alone after them): the table docs/development.md quotes, slowest first, with each file's set
and the run's total (the sets' wall times added).

    .venv/bin/python benchmarks/test_times.py [XML ...] [--markdown] [--write] [--make-seconds S]

``--write`` keeps the table in docs/data/test-times.csv, which docs/development.md shows
(`serverbench docs`), so the doc's figures are the run's.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from serverbench.drive import docsfigures

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "docs" / "data" / "test-times.csv"


# make test's two sets, as the Makefile names their XML files.
XML_FILES = (Path(".test-times-paired.xml"), Path(".test-times-serial.xml"))


@dataclass
class Times:
    """A run's times from its XML files: per test file its seconds (setup, call and teardown of
    each test), tests and sets (the XMLs' names: a file whose tests are marked one by one is in
    both), and per set its tests and wall time."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    sets: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    set_walls: dict[str, tuple[int, float]] = field(default_factory=dict)

    @property
    def wall(self) -> float:
        """The sets run one after the other."""
        return sum(wall for _, wall in self.set_walls.values())


def file_times(paths: list[Path]) -> Times:
    times = Times()
    for path in paths:
        root = ET.parse(path).getroot()
        suite = root if root.tag == "testsuite" else root.find("testsuite")
        name_of_set = path.stem.removeprefix(".test-times-")
        cases = list(suite.iter("testcase"))
        times.set_walls[name_of_set] = (len(cases), float(suite.get("time", 0)))
        for case in cases:
            module = case.get("classname", "").split(".")[-1] if case.get("classname") else "?"
            name = f"{module}.py"
            times.seconds[name] += float(case.get("time", 0))
            times.counts[name] += 1
            times.sets[name].add(name_of_set)
    return times


def shown(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def rows(times: Times, make_seconds: float | None = None) -> list[dict]:
    """Slowest first, then each set's wall time, the tests' and make test's (with the install,
    where given): the table as docs/development.md shows it."""
    ranked = sorted(times.seconds.items(), key=lambda item: -item[1])
    found = [{"file": f"`{name}`", "tests": times.counts[name], "set": " and ".join(sorted(times.sets[name])),
              "seconds": round(spent, 1), "time": shown(spent)} for name, spent in ranked]  # fmt: skip
    walls = [{"file": f"the {name} set", "tests": tests, "set": name, "seconds": round(wall, 1), "time": shown(wall)}
             for name, (tests, wall) in times.set_walls.items()]  # fmt: skip
    tests = sum(times.counts.values())
    run = [{"file": "all", "tests": tests, "set": "", "seconds": round(times.wall, 1), "time": shown(times.wall)}]
    if make_seconds is not None:
        make = {"file": "make test", "tests": tests, "set": "", "seconds": round(make_seconds, 1)}
        run.append({**make, "time": shown(make_seconds)})
    return [*found, *walls, *run]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", nargs="*", default=list(XML_FILES), type=Path)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--write", action="store_true", help="keep it in docs/data and rewrite the docs")
    parser.add_argument("--make-seconds", type=float, help="make test's own time, the install included")
    args = parser.parse_args()
    table = rows(file_times(args.xml), args.make_seconds)
    if args.write:
        docsfigures.keep(DATA.name, pd.DataFrame(table))
    if args.markdown:
        print("| file | tests | set | time |\n| --- | --- | --- | --- |")
        for row in table:
            print(f"| {row['file']} | {row['tests']} | {row['set']} | {row['time']} |")
        return
    for row in table:
        print(f"{row['seconds']:8.1f} s  {row['tests']:4d}  {row['set']:6}  {row['file']}")


if __name__ == "__main__":
    main()
