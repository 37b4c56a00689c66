"""What the front lens declares about a deployment (``Lens.rulings``): per server, bare ("none")
and behind each front it measured, the share of its rate alone the normal clients kept beside slow
clients (the lens's pooled comparison, every slow kind together); a deployment keeping less than
1 − its margin (the lens's setting: a difference it tells apart) is ruled out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from serverbench.lens import Choice, Evidence, Finding, Ruling, Rulings
from serverbench.lenses.front.record import EVERY_SLOW_KIND, FrontMetric
from serverbench.lenses.front.settings import FrontSettings

TABLE = "front_verdicts.csv"
BARE = "none"


def _front_of(server: str, deployment: str) -> str:
    return BARE if deployment == server else deployment.removeprefix(f"{server}+")


def findings(results: Path, config: Mapping) -> list[Finding]:
    import pandas as pd

    path = results / TABLE
    if not path.exists():
        return []
    table = pd.read_csv(path)
    pooled = table[(table["metric"] == FrontMetric.KEPT) & (table["slow"] == EVERY_SLOW_KIND)]
    found = []
    for row in pooled.dropna(subset=["a_value"]).to_dict("records"):
        profile, language, server, deployment = row["profile"], row["language"], row["server"], row["a"]
        least = 1 - FrontSettings.from_dict(config["profiles"][profile]["front"]).margin
        front = _front_of(server, deployment)
        keys = f"profile={profile}, a={deployment}, slow={EVERY_SLOW_KIND}"
        evidence = Evidence(round(float(row["a_value"]) * 100, 1), "% of its rate alone kept", TABLE, keys)
        where = "bare" if front == BARE else f"behind {front}"
        said = f"{where}, its clients kept {evidence.value:g}% of their rate beside slow clients ({EVERY_SLOW_KIND})"
        ruling = Ruling.RULES_OUT if row["a_value"] < least else Ruling.STANDS
        sentence = f"front: {said} ({'under' if ruling is Ruling.RULES_OUT else 'at least'} {least:.0%})"
        found.append(Finding("front", Choice.FRONT, ruling, sentence, evidence, language, server, front))
    return found


RULINGS = Rulings(choices=(Choice.FRONT,), read=findings)
