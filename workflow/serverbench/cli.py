"""The ``serverbench`` command: ``serverbench list [WHAT]``, ``serverbench plan PROFILE``, ``serverbench compare A B``,
``serverbench seeds RESULTS``,
``serverbench bisect SERVER GOOD BAD --check CHECK``, ``serverbench docs`` (the workflow itself runs with
snakemake). Each command's usage (its help and ``add_arguments``) is declared in
``drive/usage.py``, which imports none of what the commands run; the module that runs a command
(report/, drive/) is imported only when it runs, so the usage (argparse's, naming every option)
comes at once."""

from __future__ import annotations

import argparse
import importlib
import sys

from serverbench.drive.usage import COMMANDS


def parser() -> argparse.ArgumentParser:
    """The whole command line: one subcommand per entry of ``COMMANDS``."""
    top = argparse.ArgumentParser(
        prog="serverbench", description="serverbench's reading commands (a run itself: snakemake --cores 4)"
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        usage = commands.add_parser(name, help=command.help, description=command.help, epilog=command.exit_status)
        command.add_arguments(usage)
    return top


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (else the process's) and run the command: its exit status (2: a usage error)."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # the whole usage, every command named, rather than argparse's one line
        parser().print_help(sys.stderr)
        return 2
    args = parser().parse_args(argv)
    return importlib.import_module(COMMANDS[args.command].runs).run(args)


if __name__ == "__main__":
    sys.exit(main())
