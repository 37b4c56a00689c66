"""Charts built from summaries: encodings, scale, and what a browser draws."""

import copy
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import RECORDS_V1, require
from PIL import Image
from serverbench import REPO_ROOT
from serverbench.plan import config as cfg
from serverbench.report import charts, screenshots, verdicts
from serverbench.report.index import write_index

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

LANGUAGE = {
    "gunicorn": "python",
    "starman": "perl",
    "uwsgi": "python",
    "uwsgi-psgi": "perl",
    "nginx-baseline": "none",
    "bjoern": "python",
    "feersum": "perl",
}
FAMILY = {
    "gunicorn": "preforking",
    "starman": "preforking",
    "uwsgi": "preforking",
    "uwsgi-psgi": "preforking",
    "nginx-baseline": "baseline",
    "bjoern": "event-loop-c",
    "feersum": "event-loop-c",
}


def generated_summary(servers=None, profiles=("default",), tools=("wrk",), levels=(10, 100, 1000)) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    servers = servers or list(LANGUAGE)
    rows = []
    for profile in profiles:
        for tool in tools:
            for server in servers:
                for concurrency in levels:
                    rps = float(rng.uniform(1e3, 1e5))
                    rows.append(
                        {
                            "profile": profile,
                            "tool": tool,
                            "server": server,
                            "language": LANGUAGE.get(server, "python"),
                            "family": FAMILY.get(server, "x"),
                            "concurrency": concurrency,
                            "status": "ok",
                            "repeats_ok": 4,
                            "rps_trimmed_mean": rps,
                            "rps_median": rps * 0.98,
                            "rps_min": rps * 0.9,
                            "rps_max": rps * 1.1,
                            "rps_cv": 0.05,
                            "latency_p50_ms": 1.0,
                            "latency_p99_ms": 5.0,
                            "error_rate": 0.0,
                            "server_rss_peak_mb": 40.0,
                            "server_pss_peak_mb": 20.0,
                            "server_cpu_percent": 95.0,
                            "flags": "starved" if server == "starman" else "",
                            "server_version": "1.0",
                        }
                    )
    return pd.DataFrame(rows)


CONFIG = cfg.load(REPO_ROOT / "config.yaml")


def spec(chart) -> dict:
    return chart.to_dict()


def test_rps_chart_encodings():
    d = spec(charts.build("rps", CONFIG, generated_summary()))
    layers = d["spec"]["layer"]
    line = layers[1]["layer"][0]
    assert line["encoding"]["x"]["field"] == "concurrency" and line["encoding"]["x"]["scale"]["type"] == "log"
    assert line["encoding"]["y"]["field"] == "value"
    assert line["encoding"]["color"]["field"] == "server"
    assert line["encoding"]["strokeDash"]["field"] == "language"
    band = layers[0]
    assert band["mark"]["type"] == "area" and band["encoding"]["y2"]["field"] == "high"
    assert d["facet"]["row"]["field"] == "panel" and d["facet"]["column"]["field"] == "measure"
    tooltip = {t["field"] for t in line["encoding"]["tooltip"]}
    assert {"server_version", "flags", "latency_p99_ms", "server_rss_peak_mb"} <= tooltip
    assert d["params"][0]["bind"] == "legend" if "params" in d else layers[1]["params"][0]["bind"] == "legend"


@pytest.mark.parametrize(("name", "measures"), [("latency", {"p50", "p99"}), ("memory", {"RSS peak", "PSS peak"})])
def test_folded_metrics_have_both_measures(name, measures):
    d = spec(charts.build(name, CONFIG, generated_summary()))
    data = next(iter(d["datasets"].values()))
    assert {row["measure"] for row in data} == measures


def test_flagged_points_are_hollow():
    d = spec(charts.build("errors", CONFIG, generated_summary()))
    point = d["spec"]["layer"][1]["layer"][1]
    assert point["encoding"]["fill"]["condition"]["test"] == "datum.flagged"
    data = next(iter(d["datasets"].values()))
    assert all(row["flagged"] == (row["server"] == "starman") for row in data)


def test_languages_chart_pairs_families_across_languages():
    d = spec(charts.build("languages", CONFIG, generated_summary()))
    family_data = d["datasets"][d["vconcat"][0]["data"]["name"]]
    assert {row["family"] for row in family_data} == {"preforking", "event-loop-c"}
    best = d["datasets"][d["vconcat"][1]["data"]["name"]]
    assert {row["language"] for row in best} == {"python", "perl"}
    assert len(best) == 2 * 3  # one best server per language and concurrency


def ceiling_shares(config: dict, summary: pd.DataFrame) -> list[dict]:
    d = spec(charts.build("ceiling", config, summary))
    return next(iter(d["datasets"].values())), d


@pytest.mark.parametrize("ceiling", ["nginx-baseline", "bjoern"])
def test_ceiling_chart_is_the_share_of_the_configured_ceiling_by_the_verdicts_statistic(ceiling):
    """comparisons.ceiling names the ceiling; the share is a ratio of medians, as the verdicts compare."""
    config = copy.deepcopy(CONFIG)
    config["comparisons"]["ceiling"] = ceiling
    summary = generated_summary()
    data, d = ceiling_shares(config, summary)
    assert ceiling not in {row["server"] for row in data}
    assert ceiling in str(d["title"])
    medians = summary[summary["server"] == ceiling].set_index("concurrency")["rps_median"]
    assert len(data) == (len(LANGUAGE) - 1) * 3
    for row in data:
        assert row["share"] == pytest.approx(row["rps_median"] / medians[row["concurrency"]])


def test_an_unknown_chart_is_refused():
    with pytest.raises(ValueError, match="unknown chart 'pie'"):
        charts.build("pie", CONFIG, generated_summary())


def renamed_languages(config: dict, names: dict) -> dict:
    """The config with its languages renamed (python → snake, …): the catalogue's and the languages' keys."""
    config = copy.deepcopy(config)
    config["languages"] = {names.get(key, key): value for key, value in config["languages"].items()}
    for server in config["catalogue"].values():
        server["language"] = names.get(server["language"], server["language"])
    return config


def test_languages_come_from_the_catalogue_not_the_code():
    names = {"python": "snake", "perl": "camel"}
    summary = generated_summary()
    summary["language"] = summary["language"].map(lambda language: names.get(language, language))
    d = spec(charts.build("languages", renamed_languages(CONFIG, names), summary))
    family_data = d["datasets"][d["vconcat"][0]["data"]["name"]]
    assert {row["family"] for row in family_data} == {"preforking", "event-loop-c"}
    best = d["datasets"][d["vconcat"][1]["data"]["name"]]
    assert {row["language"] for row in best} == {"snake", "camel"}
    assert len(best) == 2 * 3


def generated_workers(servers=("uwsgi-cheaper-busyness", "unit-python-dynamic"), seconds=30) -> pd.DataFrame:
    rows = []
    for server in servers:
        for step in range(seconds * 2):
            t = step / 2
            phase = "load" if t < 20 else "idle"
            rows.append(
                {
                    "profile": "autoscale",
                    "workload": "hello",
                    "tool": "wrk",
                    "server": server,
                    "language": "python",
                    "concurrency": 100,
                    "family": "x",
                    "repeat": 1,
                    "t": t,
                    "phase": phase,
                    "processes": min(100, 6 + int(t * 5)) if phase == "load" else 6,
                    "threads": 10,
                    "rss_mb": 50.0,
                }
            )
    return pd.DataFrame(rows)


def test_forest_plot_draws_every_interval_on_a_log_axis_coloured_by_outcome(tmp_path):
    """The stored matrix with every cell comparable and two named pairs: decided, undetermined
    and described rows; saved as a run saves it (the schema is validated on save)."""
    config = copy.deepcopy(CONFIG)
    config["comparisons"]["not_comparable_flags"] = []
    config["comparisons"]["pairs"] = [["gunicorn", "plackup"]]
    stored = [pd.read_csv(RECORDS_V1 / f"{name}.csv") for name in ("runs", "summary")]
    table = verdicts.verdict_table(*stored, config)
    chart = charts.build("forest", config, stored[1], verdicts=table)
    spec = chart.to_dict()
    assert spec["layer"][2]["encoding"]["x"]["scale"]["type"] == "log"
    points = spec["layer"][3]["encoding"]
    assert points["color"]["field"] == "outcome" and points["color"]["scale"]["domain"][:4] == [
        "faster",
        "slower",
        "equivalent",
        "undetermined",
    ]
    drawn = {row["outcome"] for row in spec["datasets"][spec["layer"][3]["data"]["name"]]}
    assert {"faster", "undetermined"} <= drawn
    charts.save_chart(chart, tmp_path / "forest.html", tmp_path / "forest.png", tmp_path / "forest.svg")
    assert (tmp_path / "forest.png").stat().st_size > 5_000


def test_workers_chart_is_processes_against_time():
    d = spec(charts.build("workers", CONFIG, generated_summary(), generated_workers()))
    layers = d["spec"]["layer"]
    line = layers[0]
    assert line["mark"]["type"] == "line" and line["mark"]["interpolate"] == "step-after"
    assert line["encoding"]["strokeDash"]["field"] == "phase"
    encoding = d["spec"]["encoding"] if "encoding" in d["spec"] else layers[0]["encoding"]
    assert encoding["x"]["field"] == "t" and encoding["y"]["field"] == "processes"
    assert encoding["color"]["field"] == "server" and encoding["detail"]["field"] == "series"
    assert d["facet"]["row"]["field"] == "panel"
    rows = next(iter(d["datasets"].values()))
    assert len(rows) == 2 * 60 and {r["phase"] for r in rows} == {"load", "idle"}


def test_workers_chart_without_samples_says_so():
    d = spec(charts.build("workers", CONFIG, generated_summary(), pd.DataFrame()))
    assert "no samples" in json.dumps(d["title"])


def test_scale_without_max_rows_error(tmp_path):
    """30 servers × 4 profiles × 20 concurrency levels × 3 tools (4 repeats each, already aggregated)."""
    servers = [f"server{i}" for i in range(30)]
    summary = generated_summary(
        servers, profiles=("a", "b", "c", "d"), tools=("wrk", "ab", "h2"), levels=tuple(range(100, 2100, 100))
    )
    assert len(summary) == 30 * 4 * 20 * 3
    for name in ("rps", "latency"):
        chart = charts.build(name, CONFIG, summary)
        charts.save_chart(chart, tmp_path / f"{name}.html", tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000


def test_layout_problems_name_what_keeps_a_reader_out():
    """The judge of the browser tests, on layouts it must refuse."""
    chart = {"title": "forest", "drawn": True, "left": 8, "right": 380, "width": 372, "height": 300, "box_height": 304}
    fine = {"viewport": 390, "document": 390, "charts": [chart], "console_errors": []}
    assert screenshots.layout_problems(fine, "forest") == []
    wide = fine | {"document": 786, "charts": [chart | {"right": 2014}]}
    assert screenshots.layout_problems(wide, "forest") == [
        "the document is 786 px wide in a 390 px window",
        "forest: drawn from 8 to 2014 px, outside the 390 px window",
    ]
    banded = fine | {"charts": [chart | {"box_height": 460}, chart | {"title": "rps", "drawn": False}]}
    assert screenshots.layout_problems(banded, "forest") == ["forest: 160 px of blank band under it", "rps: not drawn"]
    assert screenshots.layout_problems(fine | {"console_errors": ["x"]}, "forest") == ["console: x"]


def test_the_screenshot_step_without_a_browser_says_so(tmp_path, monkeypatch):
    """No browser on PATH: the step still ends (its folder is the run's target, whatever the
    machine) with a status that names what was missing, and no picture that was never taken."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    index = tmp_path / "index.html"
    index.write_text("<html></html>")
    status = screenshots.shoot(index, tmp_path / "screenshots", "forest")
    assert status["status"] == "skipped" and "chromium" in status["reason"]
    assert sorted(path.name for path in (tmp_path / "screenshots").iterdir()) == ["status.json"]
    assert json.loads((tmp_path / "screenshots" / "status.json").read_text()) == status


def _png_pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


@pytest.mark.e2e
def test_index_and_chart_draw_in_a_real_browser(tmp_path):
    require("chromium")
    summary = generated_summary()
    csv = tmp_path / "summary.csv"
    summary.to_csv(csv, index=False)
    (tmp_path / "environment.json").write_text(json.dumps({"cpu_model": "test", "cpus": 2}))
    verdicts_csv = tmp_path / "verdicts.csv"
    stored = [pd.read_csv(RECORDS_V1 / f"{name}.csv") for name in ("runs", "summary")]
    table = verdicts.verdict_table(*stored, cfg.load(REPO_ROOT / "config.yaml"))
    table.to_csv(verdicts_csv, index=False)
    files = {}
    for name in ("forest", "rps"):  # in the workflow's order: the forest plot first
        paths = {ext: tmp_path / "charts" / f"{name}.{ext}" for ext in ("html", "png", "svg", "json")}
        chart = charts.build(name, CONFIG, summary, verdicts=table)
        charts.save_chart(chart, paths["html"], paths["png"], paths["svg"], paths["json"])
        files[charts.CHARTS[name]] = paths
    write_index(csv, verdicts_csv, tmp_path / "environment.json", files, tmp_path / "index.html")
    html = (tmp_path / "index.html").read_text()
    # The paragraph, then the forest plot, then the table of every comparison; the other charts after the Answers.
    forest = html.index(f'data-title="{charts.CHARTS["forest"]}"')
    assert html.index("<h2>Answers</h2>") < html.index('class="headline"') < forest
    table = html.index('<h3 id="comparisons">Every comparison</h3>')
    assert forest < table < html.index("Not comparable: each reason once")
    assert html.index("Not comparable: each reason once") < html.index(f'data-title="{charts.CHARTS["rps"]}"')
    assert "This run made 14 comparisons: " in html and "<iframe" not in html
    # Each reason once, listing the comparisons it stopped (not repeated per comparison).
    assert html.count("starman: starved: 98 of 100 connections got (almost) no answer") == 1 + 2  # list + table rows
    # The starved pairs, compared on how evenly they served their connections, under their own heading.
    waiting = html.index("<h3>Connections kept waiting</h3>")
    assert "serves its connections" in html[waiting:] and "Jain&#39;s index" in html[waiting:]
    # At a phone's width and a laptop's: the document no wider than the window, every chart drawn,
    # the forest plot whole inside the window, no box taller than its drawing (no blank band).
    for width in (390, 1280):
        layout = screenshots.layout(tmp_path / "index.html", width)
        assert layout["viewport"] == width and screenshots.layout_problems(layout, charts.CHARTS["forest"]) == []
        assert [chart["title"] for chart in layout["charts"]] == [charts.CHARTS["forest"], charts.CHARTS["rps"]]
        assert all(chart["height"] > 100 for chart in layout["charts"]), layout
        drawn_forest = layout["charts"][0]
        assert drawn_forest["width"] > width * 0.7, f"the forest plot does not use the width: {drawn_forest}"
    errors = screenshots.take_all(tmp_path / "index.html", tmp_path / "screenshots")
    assert errors == {"desktop": [], "narrow": [], "phone": []}
    chart_errors = screenshots.screenshot(
        (tmp_path / "charts" / "rps.html").as_uri(), tmp_path / "rps.png", (1000, 700)
    )
    assert chart_errors == []
    shots = [tmp_path / "screenshots" / f"index-{width}.png" for width in ("desktop", "phone")] + [tmp_path / "rps.png"]
    for shot in shots:
        pixels = _png_pixels(shot)
        colours = {tuple(p) for p in pixels.reshape(-1, 3)[:: max(1, pixels.shape[0] * pixels.shape[1] // 40000)]}
        non_white = (pixels.sum(axis=2) < 700).mean()
        assert len(colours) > 20, f"{shot.name}: an almost uniform screenshot ({len(colours)} colours)"
        assert non_white > 0.01, f"{shot.name}: the page is blank"
    # The charts inside the index are drawn too: the upper half of the page is not white.
    desktop = _png_pixels(shots[0])
    assert (desktop[: desktop.shape[0] // 2].sum(axis=2) < 700).mean() > 0.01
    assert os.path.getsize(tmp_path / "charts" / "rps.svg") > 1000


def latency_rows() -> pd.DataFrame:
    """Rate cells of two servers: one whose p99 takes off beyond 0.75, one that stays flat."""
    rows = []
    for server, language, capacity, p99s in (
        ("gunicorn", "python", 1000.0, [2.0, 2.2, 2.5, 40.0]),
        ("starman", "perl", 800.0, [3.0, 3.1, 3.3, 3.6]),
    ):
        for fraction, p99 in zip((0.25, 0.5, 0.75, 1.0), p99s, strict=True):
            rows.append(
                {
                    "profile": "latency",
                    "workload": "hello",
                    "tool": "oha",
                    "server": server,
                    "language": language,
                    "family": "preforking",
                    "concurrency": 2,
                    "fraction": fraction,
                    "repeat": 1,
                    "status": "ok",
                    "reason": None,
                    "capacity_tool": "wrk",
                    "capacity_concurrency": 2,
                    "capacity_rps": capacity,
                    "capacity_ci_low": capacity * 0.95,
                    "capacity_ci_high": capacity * 1.05,
                    "offered_rps": fraction * capacity,
                    "latency_p50_ms": p99 / 2,
                    "latency_p99_ms": p99,
                    "flags": "",
                }
            )
    return pd.DataFrame(rows)


def test_load_chart_marks_each_knee_against_offered_load_and_fraction():
    d = spec(charts.build("load", CONFIG, generated_summary(), latency_rows=latency_rows()))
    assert len(d["hconcat"]) == 2
    rows = next(iter(d["datasets"].values()))
    knees = {(r["server"], r["fraction"]) for r in rows if r["knee"] and r["percentile"] == "p99"}
    assert knees == {("gunicorn", 0.75), ("starman", 1.0)}
    panels = [panel["spec"]["layer"][0]["encoding"] for panel in d["hconcat"]]
    assert [p["x"]["field"] for p in panels] == ["offered_rps", "fraction"]
    assert all(p["y"]["scale"]["type"] == "log" and p["strokeDash"]["field"] == "language" for p in panels)
    assert panels[1]["x"]["axis"]["values"] == [0.25, 0.5, 0.75, 1.0]
    empty = spec(charts.build("load", CONFIG, generated_summary()))
    assert "no rate cells" in json.dumps(empty["title"])


@pytest.mark.e2e
def test_an_inline_script_cut_short_is_a_layout_problem(tmp_path):
    """The HTML parser ends an inline script at the first ``</script>`` in its text, and what
    follows is shown as text: one unbreakable line of code that makes the page scroll
    sideways. The layout check names it (a measuring script injected at the first
    ``</body>`` of the page, which is inside the inlined Vega bundle, made exactly this)."""
    require("chromium")
    page = tmp_path / "index.html"
    cut = 'let s = "</script>' + "x" * 3000 + '";</script>'
    page.write_text(f"<!doctype html><html><head></head><body><p>hello</p><script>{cut}</body></html>")
    found = screenshots.layout(page, 500)
    assert found["stray_text"] and found["stray_text"][0].startswith("x")
    problems = screenshots.layout_problems(found, "forest")
    assert any(problem.startswith("text outside any element of the page") for problem in problems), problems
    assert found["scroll_x"] > 0  # what a reader sees: the page scrolls sideways
    clean = tmp_path / "clean.html"
    clean.write_text('<!doctype html><html><body><p>hello</p><script>let s = "<\\/script>";</script></body></html>')
    assert screenshots.layout_problems(screenshots.layout(clean, 500), "forest") == []
