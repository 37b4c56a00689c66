"""The README is short and every link in it and in docs/ leads somewhere: a file of the
repository that exists and, where the link names a heading, a heading of that file."""

import re
from pathlib import Path

import pytest
from serverbench import REPO_ROOT

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
PAGES = [REPO_ROOT / "README.md", *DOCS]
# [text](target) outside code; images too.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")


def links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text()))
    return LINK.findall(text)


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = FENCE.sub("", page.read_text())
    found = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", "")).replace(" ", "-")
        found.add(slug)
    return found


def test_the_readme_is_a_short_guide():
    """A guide a newcomer reads in a minute: within 150 lines of under 120 characters, opening
    with what one may want to know (figures of runs live in docs/)."""
    text = (REPO_ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail into docs/"
    assert [n for n, line in enumerate(lines, 1) if len(line) >= 120] == []
    assert text.index("## What do you want to know?") < text.index("## Set up")


def test_every_doc_is_linked_from_the_readme():
    linked = {(REPO_ROOT / target.partition("#")[0]).resolve() for target in links(REPO_ROOT / "README.md")}
    assert DOCS and [doc.name for doc in DOCS if doc.resolve() not in linked] == []


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # a web address: not reachable from here, only well formed
            if not re.match(r"https?://[\w.-]+\.[a-z]{2,}(/\S*)?$", target):
                broken.append(f"{target}: not a web address")
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading #{anchor} in {destination.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_resolves(page):
    assert broken_links(page) == []


def test_the_link_checker_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n[fine](#a-title) [gone](missing.md) [no heading](#nowhere)\n```\n[code](x.md)\n```\n")
    assert links(page) == ["#a-title", "missing.md", "#nowhere"]
    assert broken_links(page) == ["missing.md: no such file", "#nowhere: no heading #nowhere in page.md"]
