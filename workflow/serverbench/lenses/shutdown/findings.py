"""What the shutdown lens declares about a deployment (``Lens.rulings``): per server its best
graceful stop (the fewest requests lost per stop, then the shortest delay before the signal) as
the drain; a server losing more per stop than the lens's ``deploy_lost_per_stop`` even so is ruled out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from serverbench.lens import Choice, Evidence, Finding, Ruling, Rulings
from serverbench.lenses.shutdown.settings import ShutdownSettings
from serverbench.record.vocabulary import Status

TABLE = "shutdown.csv"
GRACEFUL = "graceful"


def _server_findings(profile: str, language: str, server: str, rows, config: Mapping) -> list[Finding]:
    keys = {"language": language, "server": server}
    graceful = rows[(rows["how"] == GRACEFUL) & (rows["status"] == Status.OK)].dropna(subset=["lost_per_stop"])
    if graceful.empty:
        sentence = "shutdown measured no graceful stop of it (the catalogue declares none, or it failed)"
        return [
            Finding("shutdown", choice, Ruling.NOT_MEASURED, sentence, **keys)
            for choice in (Choice.SERVER, Choice.DRAIN)
        ]
    best = graceful.sort_values(["lost_per_stop", "delay_s"]).iloc[0]
    allowed = ShutdownSettings.from_dict(config["profiles"][profile]["shutdown"]).deploy_lost_per_stop
    drain = f"{best['signal']}, {best['delay_s']:g} s before it"
    row = f"profile={profile}, server={server}, how={GRACEFUL}, signal={best['signal']}, delay_s={best['delay_s']:g}"
    evidence = Evidence(float(best["lost_per_stop"]), "requests lost per stop", TABLE, row)
    ruling = Ruling.RULES_OUT if best["lost_per_stop"] > allowed else Ruling.STANDS
    lost = best["lost_per_stop"]
    said = f"shutdown: its best graceful stop ({drain}) lost {lost:g} requests per stop (at most {allowed:g})"
    return [
        Finding("shutdown", Choice.SERVER, ruling, said, evidence, **keys),
        Finding("shutdown", Choice.DRAIN, ruling, said, evidence, setting=drain, **keys),
    ]


def findings(results: Path, config: Mapping) -> list[Finding]:
    import pandas as pd

    path = results / TABLE
    if not path.exists():
        return []
    table = pd.read_csv(path)
    found = []
    for (profile, language, server), rows in table.groupby(["profile", "language", "server"]):
        found.extend(_server_findings(profile, language, server, rows, config))
    return found


RULINGS = Rulings(choices=(Choice.SERVER, Choice.DRAIN), read=findings)
