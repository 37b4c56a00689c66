"""The ``serverbench`` command: ``serverbench compare A B``, ``serverbench seeds RESULTS`` (the workflow
itself runs with snakemake)."""

from __future__ import annotations

import sys

from serverbench.decide import compare
from serverbench.report import seeds

COMMANDS = {"compare": compare.main, "seeds": seeds.main}
USAGE = (
    "usage: serverbench compare A B [--metric work|speed] [--format table|csv|markdown] [--fail-above 5%]\n"
    "       serverbench seeds RESULTS [--format markdown|csv] [--claims]\n"
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        sys.stderr.write(USAGE)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
