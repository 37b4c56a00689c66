"""The ``serverbench`` command: ``serverbench compare A B`` (the workflow itself runs with snakemake)."""

from __future__ import annotations

import sys

from serverbench.decide import compare

COMMANDS = {"compare": compare.main}
USAGE = "usage: serverbench compare A B [--format table|csv|markdown] [--fail-above 5%]\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        sys.stderr.write(USAGE)
        return 2
    return COMMANDS[argv[0]](argv[1:])
