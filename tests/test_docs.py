"""The README is short and every link in it and in docs/ leads somewhere: a file of the
repository that exists and, where the link names a heading, a heading of that file."""

import re
from pathlib import Path

import pandas as pd
import pytest
from serverbench import REPO_ROOT, registry
from serverbench.drive import docsfigures
from serverbench.plan import config as cfg

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
PAGES = [REPO_ROOT / "README.md", *DOCS]
# [text](target) outside code; images too.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
FIGURE = re.compile(r"<!-- ([a-z-]+):([A-Za-z0-9_.-]+) -->(.*?)<!-- /\1 -->", re.S)


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


def test_every_quoted_figure_is_its_datas(tmp_path):
    """`make docs` (serverbench docs) writes each marked figure from docs/data/; a doc that
    differs from its data fails here, and the check finds a figure edited by hand."""
    assert docsfigures.stale() == [], "run make docs: " + "; ".join(
        f"{s.path.name} {s.kind}:{s.key} {s.written!r} != {s.data!r}" for s in docsfigures.stale()
    )
    readme = (REPO_ROOT / "README.md").read_text()
    edited = tmp_path / "README.md"
    said = docsfigures.about(docsfigures.profile_time("advise"))
    edited.write_text(readme.replace(f"<!-- time:advise -->{said}", "<!-- time:advise -->about 99 min"))
    [found] = docsfigures.stale([edited])
    assert (found.kind, found.key, found.written, found.data) == ("time", "advise", "about 99 min", said)
    # Every profile has a recorded time, and configuration.md's table quotes each one.
    config = cfg.read(REPO_ROOT / "config.yaml")
    assert set(docsfigures.profile_times()) == set(config["profiles"])
    table = (REPO_ROOT / "docs" / "configuration.md").read_text()
    assert {key for kind, key, _ in FIGURE.findall(table) if kind == "time-here"} == set(config["profiles"])


def test_a_table_a_doc_shows_from_a_runs_csv_is_that_csvs_rows(tmp_path):
    """docs/recycle.md's tables are views (docs/data/views.yaml) of the profile run's CSVs kept in
    docs/data: each row shown is the one row of the CSV its keys name, each figure formatted from
    it; a figure edited in the doc is found stale."""
    view = docsfigures.views()["recycle-runs"]
    data = pd.read_csv(docsfigures.DATA / view["csv"])
    shown = docsfigures.table("recycle-runs").strip().splitlines()
    assert len(shown) == 2 + len(view["rows"])
    first = view["rows"][0]
    row = data[(data["server"] == first["server"]) & (data["setting"] == first["setting"])
               & (data["client"] == first["client"])].iloc[0]  # fmt: skip
    assert f"{row['answers_per_s']:,.0f}" in shown[2]
    doc = (REPO_ROOT / "docs" / "recycle.md").read_text()
    edited = tmp_path / "recycle.md"
    edited.write_text(doc.replace(shown[2], shown[2].replace(f"{row['answers_per_s']:,.0f}", "1")))
    [found] = docsfigures.stale([edited])
    assert (found.kind, found.key) == ("table", "recycle-runs")
    with pytest.raises(KeyError, match="0 rows"):
        docsfigures.views()["nowhere"] = {**view, "rows": [{"server": "no-such-server"}]}
        docsfigures.table("nowhere")
    del docsfigures.views()["nowhere"]


def test_a_long_table_is_pivoted_and_a_sentences_figure_is_one_row_or_a_count(tmp_path, monkeypatch):
    """A run's long table (a row per server and check, as operations.csv) shown a row per server:
    ``where`` keeps one profile's rows, ``pivot`` makes a field per check and value; a column's list
    of forms writes the interval where there is one, else the figure, else what the row says. A
    sentence's figure is one row's, or a count of rows."""
    rows = [("ops", "a", "cold_s", 0.12, 0.1, 0.2, "ok"), ("ops", "a", "balance", None, None, None, "not measured"),
            ("ops", "b", "cold_s", 0.3, None, None, "ok"), ("ops", "b", "balance", 0.99, None, None, "ok"),
            ("other", "a", "cold_s", 9.0, None, None, "ok")]  # fmt: skip
    long = pd.DataFrame(rows, columns=["profile", "server", "check", "value", "ci_low", "ci_high", "status"])
    long.to_csv(tmp_path / "long.csv", index=False)
    shipped_views, shipped_figures = docsfigures.views(), docsfigures.figures()  # read before DATA moves
    monkeypatch.setattr(docsfigures, "DATA", tmp_path)
    view = {"csv": "long.csv", "where": {"profile": "ops"},
            "pivot": {"index": "server", "columns": "check", "values": ["value", "ci_low", "ci_high", "status"]},
            "rows": [{"server": "b"}, {"server": "a"}],
            "columns": {"server": "{server}",
                        "cold start": ["{cold_s_value:.2f} [{cold_s_ci_low:.1f}–{cold_s_ci_high:.1f}]",
                                       "{cold_s_value:.2f}"],
                        "balance": ["{balance_value:.2f}", "{balance_status}"]}}  # fmt: skip
    monkeypatch.setitem(shipped_views, "long", view)
    assert docsfigures.table("long").strip().splitlines()[2:] == [
        "| b | 0.30 | 0.99 |",
        "| a | 0.12 [0.1–0.2] | not measured |",
    ]
    # Several columns make one field, joined by "_", a run of spaces and the like one "_".
    by_two = {**view, "pivot": {"index": "server", "columns": ["check", "status"], "values": "value"}}
    assert "balance_not_measured_value" in docsfigures.view_data(by_two).columns
    monkeypatch.setitem(shipped_figures, "a-cold", {**view, "row": {"server": "a"}, "form": "{cold_s_value:.2f} s"})
    monkeypatch.setitem(
        shipped_figures, "measured", {"csv": "long.csv", "count": {"status": "ok"}, "form": "{count} of them"}
    )
    text = "cold <!-- figure:a-cold -->1 s<!-- /figure -->, <!-- figure:measured -->0<!-- /figure -->"
    written, changed = docsfigures.render(text)
    assert (
        written
        == "cold <!-- figure:a-cold -->0.12 s<!-- /figure -->, <!-- figure:measured -->4 of them<!-- /figure -->"
    )
    assert [(kind, key) for kind, key, *_ in changed] == [("figure", "a-cold"), ("figure", "measured")]
    either_status = {"csv": "long.csv", "count": [{"status": "ok"}, {"status": "not measured"}], "form": "{count}"}
    monkeypatch.setitem(shipped_figures, "either-status", either_status)
    assert docsfigures.figure("either-status") == "5"  # a row equal to any of the list's
    spread = {"csv": "long.csv", "range": {"check": "cold_s"}, "of": "value", "form": "{min:.2f}–{max:.2f} s"}
    monkeypatch.setitem(shipped_figures, "cold-spread", spread)
    assert docsfigures.figure("cold-spread") == "0.12–9.00 s"  # every profile's: no where given
    either = {**spread, "range": [{"server": "b", "check": "cold_s"}, {"server": "b", "check": "balance"}]}
    monkeypatch.setitem(shipped_figures, "b-spread", either)
    assert docsfigures.figure("b-spread") == "0.30–0.99 s"
    monkeypatch.setitem(shipped_figures, "none", {**spread, "range": {"check": "nowhere"}})
    with pytest.raises(KeyError, match="no value"):
        docsfigures.figure("none")


# A run time stated in prose ("About 14 minutes on a 2-core machine", "9 min 35 s here").
STATED_TIME = re.compile(r"\b\d+(\.\d+)?\s*(minutes|min)\b|\b(ten|twenty|a few)\s+minutes\b", re.IGNORECASE)


def test_no_profile_states_a_time_of_its_own():
    """A profile's time is its recorded run's (docs/data/profile-times.yaml), shown by
    `serverbench list profiles` and the docs; a description that typed one would drift."""
    config = cfg.read(REPO_ROOT / "config.yaml")
    stated = {name: STATED_TIME.search(" ".join(profile.get("description", "").split()))
              for name, profile in config["profiles"].items()}  # fmt: skip
    assert {name: found.group(0) for name, found in stated.items() if found} == {}


def test_every_output_a_rule_writes_is_in_outputs_md():
    """docs/outputs.md, "What you get", names every file or folder a rule writes below the results
    directory (read from the rules, so a new output without its line fails here)."""
    rules = [
        *(REPO_ROOT / "workflow" / "rules").glob("*.smk"),
        *(REPO_ROOT / "workflow/serverbench/lenses").glob("*/rules.smk"),
    ]
    written = {name for path in rules for name in re.findall(r'f"\{RESULTS\}/([A-Za-z0-9_.-]+)', path.read_text())}
    for lens in registry.lenses({}):
        # Its records, where the core wires its measuring job (workflow/rules/lenses.smk).
        records = (lens.measure_job.record,) if lens.measure_job else ()
        written |= {name.split("/")[0] for name in (*lens.tables, *lens.outputs, *records)}
    page = (REPO_ROOT / "docs" / "outputs.md").read_text()
    assert sorted(name for name in written if not re.search(rf"(^|[\s,]){re.escape(name)}(/|\b)", page, re.M)) == []


def test_every_server_the_smoke_runs_is_in_servers_md():
    """docs/servers.md's table (benchmarks/catalogue_table.py from a smoke run) has a row for
    every server the smoke profile runs: a server added to the catalogue needs its row."""
    config = cfg.load(REPO_ROOT / "config.yaml", {"profile": "smoke"})
    smoke = set(cfg.requested_profile(config, "smoke")["servers"])
    rows = set(re.findall(r"^\| ([A-Za-z0-9_.+@-]+) \|", (REPO_ROOT / "docs" / "servers.md").read_text(), re.M))
    assert sorted(smoke - rows) == []


def test_a_commit_is_quoted_as_written(tmp_path, monkeypatch):
    """A short commit of digits and one e (24054e9) is a name, not 2.4054e13."""
    pd.DataFrame({"run": [1], "commit": ["24054e9"]}).to_csv(tmp_path / "kept.csv", index=False)
    shipped_figures = docsfigures.figures()
    monkeypatch.setattr(docsfigures, "DATA", tmp_path)
    monkeypatch.setitem(shipped_figures, "the-commit", {"csv": "kept.csv", "row": {"run": 1}, "form": "{commit}"})
    assert docsfigures.figure("the-commit") == "24054e9"
