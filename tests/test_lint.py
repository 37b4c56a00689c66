"""The workflow follows Snakemake's conventions and the code PEP 8 (ruff)."""

import ast
import subprocess
import sys
from pathlib import Path

from serverbench import REPO_ROOT

BIN = Path(sys.executable).parent


def run(*argv):
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


def test_snakemake_lint_is_clean():
    done = run(str(BIN / "snakemake"), "--lint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Congratulations, your workflow is in a good condition!" in done.stdout + done.stderr


def test_snakefmt():
    done = run(str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules", "workflow/serverbench/lenses")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff():
    paths = [p for p in ("workflow", "tests", "benchmarks", "apps") if (REPO_ROOT / p).exists()]
    done = run(str(BIN / "ruff"), "check", *paths)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run(str(BIN / "ruff"), "format", "--check", *paths)
    assert done.returncode == 0, done.stdout + done.stderr


def test_functions_fit_a_screen_and_the_cell_stays_small():
    """The harness reads in small pieces: no function over 60 lines in any stage, the cell's phases at most 150."""
    package = REPO_ROOT / "workflow" / "serverbench"
    long = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"{path.relative_to(package)}:{node.lineno} {node.name}")
    assert not long, long
    assert len((package / "cell" / "phases.py").read_text().splitlines()) <= 150
