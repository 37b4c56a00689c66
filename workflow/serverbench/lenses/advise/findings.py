"""What advise declares about a deployment (``Lens.rulings``): its ranking of each server's best
setting (capacity at the p99 objective, then memory) as the deploy answer's candidates, and per
server a finding: advise's own verdict (a server whose reloads failed requests, or that met the
objective with no setting, is ruled out) and the workers × threads it chose."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from serverbench.lens import Candidate, Choice, Evidence, Finding, Ruling, Rulings
from serverbench.lenses.advise.record import Verdict

TABLE = "advice_recommendations.csv"
CONFIGURATIONS = "advice/configurations"


def _rows(results: Path) -> list[dict]:
    import pandas as pd

    path = results / TABLE
    if not path.exists():
        return []
    table = pd.read_csv(path)
    return [
        {key: (None if pd.isna(value) else value) for key, value in row.items()} for row in table.to_dict("records")
    ]


def _capacity(row: dict, column: str) -> Evidence:
    unit = f"req/s at p99 ≤ {row['objective_p99_ms']:g} ms"
    return Evidence(row[column], unit, TABLE, f"profile={row['profile']}, server={row['server']}, {column}")


def candidates(results: Path, config: Mapping) -> list[Candidate]:
    """Every server with a chosen setting, the most capacity first, then the least memory."""
    chosen = [row for row in _rows(results) if row["model"] is not None and row["capacity_rps"] is not None]
    chosen.sort(key=lambda row: (-row["capacity_rps"], row["memory_mb"] if row["memory_mb"] is not None else 0))
    found = []
    for row in chosen:
        folder = results / CONFIGURATIONS / row["server"]
        files = tuple(str(path.relative_to(results)) for path in sorted(folder.glob("*")) if path.is_file())
        memory = Evidence(row["memory_mb"], "MB PSS under that load", TABLE, f"server={row['server']}, memory_mb")
        missed = _capacity(row, "capacity_missed_rps") if row["capacity_missed_rps"] is not None else None
        found.append(
            Candidate(
                "advise",
                row["language"],
                row["server"],
                row["model"],
                int(row["workers"]),
                int(row["threads"]),
                _capacity(row, "capacity_rps"),
                missed,
                memory,
                files,
            )
        )
    return found


def _server_finding(row: dict) -> Finding:
    keys = {"language": row["language"], "server": row["server"]}
    verdict = Verdict(row["verdict"])
    if verdict is Verdict.NOT_MEASURED:
        return Finding(
            "advise", Choice.SERVER, Ruling.NOT_MEASURED, f"advise could not measure it: {row['reason']}", **keys
        )
    if verdict is Verdict.NOT_RECOMMENDED:
        failed = row["reload_failed"]
        evidence = (
            Evidence(
                failed, "requests failed over its reloads under load", TABLE, f"server={row['server']}, reload_failed"
            )
            if failed
            else None
        )
        return Finding("advise", Choice.SERVER, Ruling.RULES_OUT, f"advise: {row['reason']}", evidence, **keys)
    sentence = f"advise: the most capacity at p99 ≤ {row['objective_p99_ms']:g} ms within the memory budget"
    return Finding("advise", Choice.SERVER, Ruling.STANDS, sentence, _capacity(row, "capacity_rps"), **keys)


def findings(results: Path, config: Mapping) -> list[Finding]:
    found = []
    for row in _rows(results):
        found.append(_server_finding(row))
        if row["model"] is not None and row["capacity_rps"] is not None:
            setting = f"{int(row['workers'])}×{int(row['threads'])}"
            gain = f", {row['gain']:g} × the rule of thumb's" if row["gain"] is not None else ""
            sentence = f"advise searched {int(row['points'])} settings: {setting} held the most{gain}"
            evidence = _capacity(row, "capacity_rps")
            keys = {"language": row["language"], "server": row["server"], "setting": setting}
            found.append(Finding("advise", Choice.WORKERS, Ruling.STANDS, sentence, evidence, **keys))
    return found


RULINGS = Rulings(choices=(Choice.SERVER, Choice.WORKERS), read=findings, candidates=candidates)
