"""One vocabulary for a reader: the glossary defines every word the page shows for a comparison
(each outcome and each kind of comparison, from record/vocabulary.py) and every lens the
registry has; a figure that config.yaml sets (the full-speed window) is the config's wherever a
user doc states it; and the user docs' prose names no commit and none of this project's issues."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from serverbench import REPO_ROOT, registry
from serverbench.drive import docsfigures
from serverbench.record.vocabulary import Kind, Outcome

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

GLOSSARY = REPO_ROOT / "docs" / "glossary.md"
# The developer docs may name commits and issues; every other doc and the README are a user's.
DEVELOPER_DOCS = {"development.md", "architecture.md"}
USER_DOCS = [
    path
    for path in docsfigures.documents()
    if path.name not in DEVELOPER_DOCS and not path.name.startswith("experiment-log")
]
# A short or long commit: 7 to 40 hex digits with a digit and a letter among them, a word alone.
COMMIT = re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")
# This project's own tickets ("issue 80", "stop 52"); an upstream one is a link to its tracker.
OWN_TICKET = re.compile(r"\b(issue|stop)s? \d+\b", re.IGNORECASE)
WINDOW = re.compile(r"(\d+(?:\.\d+)?) ms windows|windows of (\d+(?:\.\d+)?) ms")


def defined(text: str) -> set[str]:
    """The words a glossary sets in bold."""
    return set(re.findall(r"\*\*([^*]+)\*\*", text))


def prose(path: Path) -> str:
    """A doc without its marked figures (those come from docs/data, not typed here)."""
    return docsfigures.MARK.sub("", path.read_text())


def missing_words(text: str) -> list[str]:
    words = [*(outcome.value for outcome in Outcome if outcome.value), *(kind.value for kind in Kind)]
    return sorted(set(words) - defined(text))


def test_the_glossary_defines_every_outcome_and_kind_the_page_shows():
    assert missing_words(GLOSSARY.read_text()) == []


def test_a_word_left_out_of_the_glossary_is_found():
    text = GLOSSARY.read_text().replace("**undetermined**", "undetermined").replace("**family**", "family")
    assert missing_words(text) == ["family", "undetermined"]


def test_the_glossary_names_every_lens():
    assert sorted({lens.name for lens in registry.lenses({})} - defined(GLOSSARY.read_text())) == []


def config_window_ms() -> float:
    return yaml.safe_load((REPO_ROOT / "config.yaml").read_text())["full_speed"]["window_s"] * 1000


def stated_windows(paths: list[Path]) -> dict[str, set[float]]:
    """Each doc's full-speed window sizes, as its prose states them in ms."""
    found = {}
    for path in paths:
        sizes = {float(a or b) for a, b in WINDOW.findall(" ".join(prose(path).split()))}
        if sizes:
            found[path.name] = sizes
    return found


def test_the_full_speed_window_is_config_yamls_wherever_a_doc_states_it(tmp_path):
    """The glossary states it (from `full_speed.window_s`); a doc that states another is found."""
    stated = stated_windows(USER_DOCS)
    assert stated["glossary.md"] == {config_window_ms()}
    assert {name: sizes for name, sizes in stated.items() if sizes != {config_window_ms()}} == {}
    other = tmp_path / "outputs.md"
    other.write_text("windows.csv  per closed-loop cell, its\n  100 ms windows: the rate at full speed\n")
    assert stated_windows([other]) == {"outputs.md": {100.0}}


def named_commits_and_tickets(path: Path) -> list[str]:
    text = prose(path)
    return [found.group(0) for found in (*COMMIT.finditer(text), *OWN_TICKET.finditer(text))]


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda page: page.name)
def test_a_user_doc_names_no_commit_and_no_issue_of_ours(page):
    assert named_commits_and_tickets(page) == []


def test_a_commit_or_an_issue_number_in_a_user_doc_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "The run of 57a9fdc (issue 80, stop 52), [gunicorn#3394](https://github.com/benoitc/gunicorn/issues/3394),"
        " 2026-11-29, 10,000 requests, <!-- figure:x -->24054e9<!-- /figure -->.\n"
    )
    assert named_commits_and_tickets(page) == ["57a9fdc", "issue 80", "stop 52"]
