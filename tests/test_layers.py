"""The package's layout is its pipeline, and the layering is a contract: a stage
imports only earlier ones, the record no stage, the host only the cell stage
(import-linter, pyproject.toml). No module names a language: they come from the
catalogue."""

import ast
import io
import os
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from serverbench import REPO_ROOT

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

PACKAGE = REPO_ROOT / "workflow" / "serverbench"
STAGES = ["plan", "host", "cell", "record", "tables", "decide", "report"]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess:
    """import-linter over the package found in ``package_parent``, with the repository's contracts."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO_ROOT / "pyproject.toml"), "--no-cache"],
        cwd=package_parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_tree_shows_the_stages_and_the_lenses():
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} == {*STAGES, "lenses", "drive"}
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == [
        "__init__.py",
        "cli.py",
        "files.py",
        "lens.py",
        "registry.py",
        "section.py",
    ]


def test_the_layering_contract_holds():
    done = lint_imports(PACKAGE.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout


def planted(tmp_path: Path, module: str, line: str) -> Path:
    copy = tmp_path / "planted"
    shutil.copytree(PACKAGE, copy / "serverbench", ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "serverbench" / module
    target.write_text(target.read_text() + f"\n{line}\n")
    return copy


def test_an_upward_import_breaks_the_contract(tmp_path):
    """The record importing the report (a later stage) is refused."""
    done = lint_imports(planted(tmp_path, "record/model.py", "from serverbench.report import names  # noqa"))
    assert done.returncode != 0
    assert "Stages import only earlier stages BROKEN" in done.stdout
    assert "serverbench.record.model -> serverbench.report.names" in done.stdout


def test_the_core_imports_no_lens(tmp_path):
    done = lint_imports(planted(tmp_path, "report/answers.py", "from serverbench.lenses.front import report  # noqa"))
    assert done.returncode != 0
    assert "serverbench.report.answers -> serverbench.lenses.front.report" in done.stdout


def test_lenses_do_not_import_each_other(tmp_path):
    done = lint_imports(planted(tmp_path, "lenses/front/decide.py", "from serverbench.lenses import work  # noqa"))
    assert done.returncode != 0
    assert "Lenses do not import each other BROKEN" in done.stdout


def test_inside_a_lens_the_stages_keep_their_order(tmp_path):
    done = lint_imports(
        planted(tmp_path, "lenses/front/record.py", "from serverbench.lenses.front import table  # noqa")
    )
    assert done.returncode != 0
    assert "Inside a lens the stages keep their order BROKEN" in done.stdout


def test_bisect_reads_the_releases_lens_only_through_its_declaration(tmp_path):
    """drive/bisect (and the CLI's checks for it) find what they read of the releases lens in its
    ``Lens.bisection``, through the registry: importing the lens's modules is refused."""
    planted_import = "from serverbench.lenses.releases import PREVIOUS  # noqa"
    done = lint_imports(planted(tmp_path, "drive/bisect.py", planted_import))
    assert done.returncode != 0
    assert "drive reaches the lenses through their declarations BROKEN" in done.stdout


def test_compare_reads_the_work_lens_only_through_its_declaration(tmp_path):
    """drive/compare finds how two runs' work is compared in the work lens's ``Lens.between_runs``,
    through the registry (as bisect does releases'): no drive module names a lens module."""
    planted_import = "from serverbench.lenses.work import compare as compare_work  # noqa"
    done = lint_imports(planted(tmp_path, "drive/compare.py", planted_import))
    assert done.returncode != 0
    assert "drive reaches the lenses through their declarations BROKEN" in done.stdout


def test_the_host_is_the_cell_stages_alone(tmp_path):
    done = lint_imports(planted(tmp_path, "decide/compare.py", "from serverbench.host import procfs  # noqa"))
    assert done.returncode != 0
    assert "Only the cell stage touches the host BROKEN" in done.stdout


def string_literals(path: Path) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [token.string.strip("\"'").lower() for token in tokens if token.type == tokenize.STRING]


def test_no_module_names_a_language():
    """Languages are data (the catalogue, `languages` in config): no module writes "python" or "perl"."""
    named = [
        f"{path.relative_to(PACKAGE)}: {literal!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for literal in string_literals(path)
        if literal in ("python", "perl")
    ]
    assert not named, named


def vocabulary_words() -> set[str]:
    """The decision words: every outcome, every kind of more than one word, and the old name of
    an undetermined rank test (single-word kinds such as "family" are column names too)."""
    from serverbench.record.vocabulary import Kind, Outcome

    several = {kind.value for kind in Kind if " " in kind.value or "/" in kind.value}
    # "measured" and "not measured" describe a figure (a knee) and are every table's status words too.
    described = {Outcome.MEASURED, Outcome.NOT_MEASURED, Outcome.PENDING}
    outcomes = {outcome.value for outcome in Outcome if outcome not in described}
    return outcomes | several | {"no detectable difference"}


def test_no_outcome_or_kind_word_outside_the_vocabulary_and_the_report_stage():
    """A decision is made with the vocabulary's members (record/vocabulary), never with its words:
    only the vocabulary and the report stage (report/, a lens's report.py) write them."""
    words = vocabulary_words()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE)
        if where.parts[0] == "report" or where.name == "report.py" or where == Path("record/vocabulary.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words:
                found.append(f"{where}:{node.lineno}: {node.value!r}")
    assert not found, found


def test_the_word_check_finds_a_planted_word(tmp_path):
    planted = tmp_path / "decided.py"
    planted.write_text('outcome = "faster" if ratio > 1 else "less work"\n')
    words = vocabulary_words()
    hits = [
        n.value for n in ast.walk(ast.parse(planted.read_text())) if isinstance(n, ast.Constant) and n.value in words
    ]
    assert hits == ["faster", "less work"]


def test_parsing_the_workflow_loads_no_charting_library():
    """What workflow/rules/common.smk imports at parse time (every job parses the Snakefile) leaves Altair,
    SciPy and statsmodels unloaded: chart names come from report.names."""
    common = (REPO_ROOT / "workflow" / "rules" / "common.smk").read_text()
    imports = [line for line in common.splitlines() if line.startswith("from serverbench")]
    assert any("report.names" in line for line in imports)
    # The parse also loads every lens (common.smk: registry.lenses).
    loaded = [
        "registry.lenses({})",
        "import sys",
        "print(sorted({'altair', 'scipy', 'statsmodels'} & set(sys.modules)))",
    ]
    probe = "\n".join([*imports, *loaded])
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
