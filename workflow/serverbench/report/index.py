"""index.html: the answers first, then the charts, the sortable summary, failed and
flagged cells, and the environment (Jinja2, ``templates/index.html.j2``)."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pandas as pd
import vl_convert
from altair.utils._importers import vl_version_for_vl_convert
from markupsafe import Markup

from serverbench import files
from serverbench.decide.seeds import claims_in_brief
from serverbench.decide.verdicts import read_verdicts
from serverbench.lens import Medium, Place, Section, Template
from serverbench.record.flags import FLAG_HELP
from serverbench.record.vocabulary import Status
from serverbench.report import seeds as seed_report
from serverbench.report.answers import (
    answers,
    answers_markdown,
    comparison_table,
    counts_sentence,
    headline,
    lead_paragraph,
    margin_sentence,
)
from serverbench.report.machine import hosts_sentence, steadiness_sentence
from serverbench.report.names import CHARTS
from serverbench.report.section import answers_markdown_of, section_markdown
from serverbench.report.spread import spread_context

# The summary's columns the page's table shows (summary.csv has them all).
PAGE_COLUMNS = [
    "profile", "tool", "server", "language", "family", "concurrency", "status", "repeats_ok",
    "rps_trimmed_mean", "rps_cv", "latency_p50_ms", "latency_p99_ms", "error_rate",
    "server_rss_peak_mb", "server_pss_peak_mb", "server_cpu_percent", "keepalive", "flags",
]  # fmt: skip
TEMPLATES = jinja2.Environment(
    # The page's own templates, and a lens's section by its file's absolute path.
    loader=jinja2.ChoiceLoader([jinja2.PackageLoader("serverbench.report", "templates"), jinja2.FileSystemLoader("/")]),
    autoescape=jinja2.select_autoescape(default=True),
    undefined=jinja2.StrictUndefined,
)


def _lens_template(block: Template) -> Markup:
    """A lens's own markup (a section's Template block), from its template by its absolute path."""
    return Markup(TEMPLATES.get_template(str(block.template)).render(**block.context))


TEMPLATES.globals.update(PAGE=Medium.PAGE, lens_template=_lens_template)


def _table(frame: pd.DataFrame, columns: list[str], sortable: bool = False) -> Markup:
    present = [c for c in columns if c in frame.columns]
    classes = "sortable" if sortable else None
    # pandas escapes every cell (escape=True): the markup is safe to insert.
    table = frame[present].to_html(
        index=False, na_rep="", float_format=lambda v: f"{v:,.3g}", border=0, classes=classes
    )
    return Markup(table)


def _chart(number: int, title: str, outputs: dict, index_dir: Path) -> dict:
    """One chart as the page shows it: drawn in place from its Vega-Lite spec (the ``json``
    output), with links to its own page and its images."""
    spec = Path(outputs["json"]).read_text() if "json" in outputs else None
    return {
        "id": f"chart-{number}",
        "title": title,
        # Inside <script type="application/json">: "</" must not end the element early.
        "spec": Markup(spec.replace("</", "<\\/")) if spec else None,
        "links": {ext: Path(path).relative_to(index_dir).as_posix() for ext, path in outputs.items() if ext != "json"},
    }


def vega_script() -> Markup:
    """vega, vega-lite and vega-embed in one script (vl-convert's bundle, as Altair inlines
    it), so the page draws its charts with no network."""
    bundle = vl_convert.javascript_bundle(vl_version=vl_version_for_vl_convert())
    if "</script" in bundle.lower():
        raise RuntimeError("vl-convert's bundle holds '</script': it cannot be inlined into the page")
    return Markup(bundle)


def index_context(summary: pd.DataFrame, environment: dict, charts: dict, index_dir: Path) -> dict:
    """What index.html shows: the charts (drawn in place), the tables, the environment."""
    bad = summary[summary["status"] != Status.OK]
    flagged = summary[summary["flags"].fillna("") != ""]
    drawn = [_chart(number, title, outputs, index_dir) for number, (title, outputs) in enumerate(charts.items())]
    return {
        "cells": len(summary),
        "statuses": ", ".join(f"{n} {s}" for s, n in summary["status"].value_counts().items()),
        "environment": {key: environment.get(key) for key in ("cpu_model", "cpus", "kernel", "git_commit")},
        "machine": steadiness_sentence(environment.get("host_speed")),
        # The forest plot leads, under the headline; the other charts follow the Answers.
        "forest": next((chart for chart in drawn if chart["title"] == CHARTS["forest"]), None),
        "charts": [chart for chart in drawn if chart["title"] != CHARTS["forest"]],
        "summary_table": _table(summary, PAGE_COLUMNS, sortable=True),
        "failed_count": len(bad),
        "failed_table": _table(bad, ["profile", "tool", "server", "concurrency", "status", "reason"])
        if len(bad)
        else None,
        "flagged_count": len(flagged),
        "flagged_table": _table(flagged, ["profile", "tool", "server", "concurrency", "flags"])
        if len(flagged)
        else None,
        "flag_help": FLAG_HELP,
        "environment_json": json.dumps(environment, indent=2),
        "vega_script": vega_script() if any(chart["spec"] for chart in drawn) else None,
    }


def seeds_context(side_csv, claims_csv) -> dict | None:
    """The seeds side by side (``report.seeds``), where a profile of the run re-runs a seed table."""
    side = pd.read_csv(side_csv, dtype={"seed": str}) if side_csv else pd.DataFrame()
    if side.empty:
        return None
    claims = pd.read_csv(claims_csv, dtype={"seed": str})
    claims = claims[claims["profile"].isin(set(side["profile"]))]
    blocks = [
        {
            "heading": block["heading"],
            "tau": block["tau"],
            "table": Markup(block["rows"].to_html(index=False, border=0)),
        }
        for block in seed_report.condition_blocks(side)
    ]
    brief = claims_in_brief(claims)
    return {"blocks": blocks, "claims": _table(brief, ["seed", "quote", "in_seed", "in_run", "why"])}


def write_answers(path: Path, context: dict, verdicts, language_titles, sections) -> None:
    """answers.md: the page's sentences in the page's order: the lenses that lead, the Answers
    (the timed ones, then those the lenses add), the lenses after them, then those closing the page."""
    # A blank line after each leading section; those after the Answers follow on (as they always have).
    lead = "".join(section_markdown(section) + "\n" for section in sections if section.place == Place.LEAD)
    timed = answers_markdown(verdicts, language_titles, lead=context["headline"])
    added = "".join(map(answers_markdown_of, sections))
    after = "".join(section_markdown(section) for section in sections if section.place == Place.AFTER)
    # A closing section's part where it has one for answers.md.
    closing = "".join(
        section_markdown(section)
        for section in sections
        if section.place == Place.CLOSING and section.on(Medium.MARKDOWN)
    )
    files.write_atomic(path, lead + timed + added + after + closing)


def write_index(
    summary_csv,
    verdicts_csv,
    environment_json,
    charts: dict,
    index_path,
    language_titles=None,
    answers_path=None,
    seeds_csv=None,
    seed_claims_csv=None,
    runs_csv=None,
    sections: list[Section] | None = None,
) -> None:
    """One page: the answers, then charts, the sortable summary, failed and flagged cells, the
    environment. ``language_titles`` names each language in the headline; ``sections`` are the
    lenses' (serverbench.registry.sections), each where its lens places it."""
    index_path = Path(index_path)
    sections = sections or []
    summary = pd.read_csv(summary_csv)
    environment = json.loads(Path(environment_json).read_text()) if environment_json else {}
    context = index_context(summary, environment, charts, index_path.parent)
    verdicts = read_verdicts(verdicts_csv)
    context["answers"] = answers(verdicts)
    context["headline"] = headline(verdicts, language_titles)
    context["margin_words"] = margin_sentence(verdicts)
    context["counts"] = counts_sentence(verdicts)
    every = comparison_table(verdicts)
    context["comparisons"] = {"columns": list(every.columns), "rows": every.to_dict("records")} if len(every) else None
    # The first paragraph reads every lens: what the run decided first, and by which lens.
    context["headline"] = lead_paragraph(context["headline"], next((s.lead for s in sections if s.lead), None))
    context["spread"] = spread_context(verdicts, summary, language_titles)
    context["sections"] = sections
    if answers_path:
        write_answers(Path(answers_path), context, verdicts, language_titles, sections)
    context["seeds"] = seeds_context(seeds_csv, seed_claims_csv)
    context["hosts"] = hosts_sentence(pd.read_csv(runs_csv, low_memory=False) if runs_csv else None)
    files.write_atomic(index_path, TEMPLATES.get_template("index.html.j2").render(**context))
