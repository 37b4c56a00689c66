"""The ``serverbench`` command: ``serverbench list [WHAT]``, ``serverbench plan PROFILE``, ``serverbench compare A B``,
``serverbench seeds RESULTS``,
``serverbench bisect SERVER GOOD BAD --check CHECK``, ``serverbench docs`` (the workflow itself runs with
snakemake). Each command's module (report/, drive/) declares its arguments
(``add_arguments``) and runs them (``run``); the usage is argparse's, so it names every
option."""

from __future__ import annotations

import argparse
import sys

from serverbench.drive import bisect, compare, docsfigures, listing, preview
from serverbench.report import seeds

COMMANDS = {
    "list": listing,
    "plan": preview,
    "compare": compare,
    "seeds": seeds,
    "bisect": bisect,
    "docs": docsfigures,
}


def parser() -> argparse.ArgumentParser:
    """The whole command line: one subcommand per entry of ``COMMANDS``."""
    top = argparse.ArgumentParser(
        prog="serverbench", description="serverbench's reading commands (a run itself: snakemake --cores 4)"
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        epilog = getattr(module, "EXIT_STATUS", None)
        command = commands.add_parser(name, help=module.HELP, description=module.HELP, epilog=epilog)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return top


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (else the process's) and run the command: its exit status (2: a usage error)."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # the whole usage, every command named, rather than argparse's one line
        parser().print_help(sys.stderr)
        return 2
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
