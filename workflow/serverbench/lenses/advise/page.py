"""The page's "Your deployment" (an ``advise`` run opens with it): the sentences of
``report.advice``, the inputs, and the points searched as a chart (capacity at the objective
against workers × threads, the tree's memory under it below)."""

from __future__ import annotations

import altair as alt
import pandas as pd
from markupsafe import Markup

from serverbench.lens import WRITTEN, Figure, Link, Medium, Paragraph, Section, Sentences
from serverbench.lenses.advise.report import ranking_sentence, server_sentence
from serverbench.record.vocabulary import Status

CHART_ID = "chart-advice"
CHART_TITLE = "The settings searched: capacity at the objective and memory, by workers × threads"
TITLE = "Your deployment"
CONSOLE_HEADING = (
    "Your deployment (results/advice_recommendations.csv, configurations in results/advice/configurations):"
)


def advice_chart(points: pd.DataFrame) -> dict:
    """The points searched: capacity at the objective over workers × threads (its interval as a
    rule), and the tree's PSS under that load below, a colour per server."""
    data = points[points["status"] == Status.OK].copy()
    data["workers × threads"] = data["workers"] * data["threads"]
    data["missed"] = data["capacity_missed_rps"].fillna(data["capacity_rps"])
    base = alt.Chart(data).encode(
        x=alt.X("workers × threads:Q", scale=alt.Scale(type="log")),
        color=alt.Color("server:N"),
        shape=alt.Shape("model:N"),
        tooltip=["server", "model", "workers", "threads", "capacity_rps", "capacity_missed_rps", "memory_mb"],
    )
    capacity = (
        base.mark_rule().encode(y=alt.Y("capacity_rps:Q", title="req/s at the objective"), y2="missed:Q")
        + base.mark_point(filled=True).encode(y="capacity_rps:Q")
    ).properties(height=220)
    memory = base.mark_point().encode(y=alt.Y("memory_mb:Q", title="PSS under load (MB)")).properties(height=140)
    spec = alt.vconcat(capacity, memory).to_json()
    return {"id": CHART_ID, "title": CHART_TITLE, "spec": Markup(spec.replace("</", "<\\/")), "links": {}}


def _inputs(first: dict) -> str:
    """The objective and the limits the search kept to, in words."""
    budget = first.get("memory_budget_mb")
    limit = first.get("cpu_limit")
    cpus = (
        f", {first.get('cpus')} CPU(s) for the server"
        if limit is None or pd.isna(limit)
        else f", a CPU limit of {limit:g} for the server (a cgroup quota; its cpuset the host's "
        f"{first.get('cpus')} CPU(s))"
    )
    return (
        f"p99 ≤ {first.get('objective_p99_ms', float('nan')):g} ms, "
        + (f"at most {budget:g} MB of PSS" if not pd.isna(budget) else "no memory budget")
        + cpus
    )


def advice_section(points_csv, recommendations_csv) -> Section:
    """The section "Your deployment": what to run per server, the ranking, the points searched."""
    rows = pd.read_csv(recommendations_csv).to_dict("records")
    inputs = _inputs(rows[0] if rows else {})
    sentences = [server_sentence(row) for row in rows]
    ranking = ranking_sentence(rows)
    return Section(
        TITLE,
        (
            Paragraph(CONSOLE_HEADING, Medium.CONSOLE),
            Paragraph(
                (
                    f"For this app on this machine ({inputs}): each server's settings searched from the rule of "
                    "thumb, the setting with the most requests per second at the objective within the budget (of "
                    "those the intervals do not tell apart, the one using the least memory), reloaded under load (",
                    Link("advice_recommendations.csv"),
                    ", every point in ",
                    Link("advice.csv"),
                    ", each server's configuration in ",
                    Link("advice/configurations/"),
                    ").",
                ),
                Medium.PAGE,
            ),
            Paragraph(f"Objective and limits: {inputs}.", Medium.MARKDOWN),
            Sentences(sentences, WRITTEN),
            # On the console a line per server, no more.
            Sentences(sentences, Medium.CONSOLE, marker=""),
            Paragraph(ranking or ""),
            *([Figure(advice_chart(pd.read_csv(points_csv)))] if rows else []),
        ),
        anchor="your-deployment",
    )
