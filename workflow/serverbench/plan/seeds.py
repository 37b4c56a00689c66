"""The seed studies as data (``seeds/studies.yaml``, schema ``workflow/schemas/seeds.schema.yaml``).

Every figure a seed states for a server becomes a row of :attr:`Seeds.figures`
(seed, table, server as labelled, the catalogue server standing for it, the
configuration, tool, command and concurrency as stated, metric, value, unit)
with the line of the seed it stands on: :func:`locate` finds the block's
heading and the quoted line in the seed's text and refuses a quote that is
not there, or a value its quote does not hold. Claims stay as written, each
a list of two-server comparisons on a metric (``decide.seeds`` judges them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pandas as pd
import yaml

from serverbench import REPO_ROOT

DATA_PATH = REPO_ROOT / "seeds" / "studies.yaml"
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "seeds.schema.yaml"
FIGURE_COLUMNS = [
    "seed",
    "table",
    "server",
    "catalogue",
    "language",
    "configuration",
    "tool",
    "command",
    "concurrency",
    "requests",
    "metric",
    "value",
    "number",
    "low",
    "high",
    "unit",
    "after",
    "occurrence",
    "quote",
    "line",
]
NUMBER = re.compile(r"^~?([0-9][0-9,]*(?:\.[0-9]+)?)(k?)$")
RANGE = re.compile(r"^(.+?)\s*(?:\.\.\.|–|-)\s*(.+)$")
# A unit stated in thousands ("29 тысяч" req/s): ``number`` is in the base unit, ``unit`` stays as stated.
THOUSAND = "thousand "


class SeedDataError(ValueError):
    """The seed data disagree with their schema or with the seeds' texts."""


@dataclass
class Seeds:
    studies: dict
    tables: pd.DataFrame
    figures: pd.DataFrame
    claims: list[dict]
    source_dir: Path
    located: bool = False
    problems: list[str] = field(default_factory=list)

    def table(self, seed: str, table: str) -> dict:
        """One table's row; a key the YAML left empty (a table no profile re-runs) is None."""
        found = self.tables[(self.tables["seed"] == seed) & (self.tables["table"] == table)]
        return {key: None if _missing(value) else value for key, value in found.iloc[0].to_dict().items()}

    def catalogue_of(self, seed: str, table: str) -> dict[str, str]:
        """The seed's server labels in one table → the catalogue servers standing for them."""
        rows = self.figures[(self.figures["seed"] == seed) & (self.figures["table"] == table)]
        return dict(zip(rows["server"], rows["catalogue"], strict=True))

    def for_profile(self, profile: str) -> list[dict]:
        """The seed tables a profile re-runs."""
        return [row for row in self.tables.to_dict("records") if row["profile"] == profile]


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # NaN


def number(value) -> float | None:
    """A stated value as a number: 198.94, "10,000", "~5k", "4.04k"; None for ranges ("3...200")."""
    if isinstance(value, int | float):
        return float(value)
    match = NUMBER.match(str(value).strip())
    if not match:
        return None
    return float(match.group(1).replace(",", "")) * (1000 if match.group(2) else 1)


def bounds(value, unit: str = "") -> tuple[float | None, float | None]:
    """(low, high) of a stated value in the base unit: a number twice, a range ("7500...5000") its ends."""
    scale = 1000 if unit.startswith(THOUSAND) else 1
    single = number(value)
    if single is not None:
        return single * scale, single * scale
    match = RANGE.match(str(value).strip())
    ends = [number(part) for part in match.groups()] if match else [None]
    if None in ends:
        return None, None
    return min(ends) * scale, max(ends) * scale


def load(path: Path = DATA_PATH, locate_quotes: bool = True) -> Seeds:
    """The seed data, validated; with line numbers where the seeds' texts are at hand."""
    data = yaml.safe_load(Path(path).read_text())
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "(top)"
        raise SeedDataError(f"{path}: {where}: {error.message}")
    tables = pd.DataFrame(data["tables"])
    seeds = Seeds(
        studies=data["studies"],
        tables=tables,
        figures=_flatten(data, tables),
        claims=data["claims"],
        source_dir=(REPO_ROOT / data["source_dir"]).resolve(),
    )
    _check_references(seeds)
    if locate_quotes:
        locate(seeds)
    return seeds


def _flatten(data: dict, tables: pd.DataFrame) -> pd.DataFrame:
    known = {(t["seed"], t["table"]): t for t in data["tables"]}
    rows = []
    for block in data["figures"]:
        table = known.get((block["seed"], block["table"]))
        if table is None:
            raise SeedDataError(f"figures of {block['server']}: no table {block['seed']}/{block['table']}")
        base = {
            "seed": block["seed"],
            "table": block["table"],
            "server": block["server"],
            "catalogue": block["catalogue"],
            "language": data["studies"][block["seed"]]["language"],
            "configuration": block["configuration"],
            "tool": table["tool"],
            "command": block.get("command", table["command"]),
            "concurrency": block.get("concurrency", table["concurrency"]),
            "requests": block.get("requests", table.get("requests")),
            "after": block["after"],
            "occurrence": block.get("occurrence", 1),
        }
        for metric, value, unit, quote in block["figures"]:
            low, high = bounds(value, unit)
            rows.append(
                {
                    **base,
                    "metric": metric,
                    "value": value,
                    "number": low if low == high else None,
                    "low": low,
                    "high": high,
                    "unit": unit,
                    "quote": quote,
                    "line": None,
                }
            )
    return pd.DataFrame(rows, columns=FIGURE_COLUMNS)


def _check_references(seeds: Seeds) -> None:
    """Every claim names tables that exist and servers with figures in them."""
    for claim in seeds.claims:
        for table in claim["tables"]:
            if seeds.tables[(seeds.tables["seed"] == claim["seed"]) & (seeds.tables["table"] == table)].empty:
                raise SeedDataError(f"claim {claim['id']}: no table {claim['seed']}/{table}")
        servers = set(seeds.figures[seeds.figures["seed"] == claim["seed"]]["server"])
        named = {s for item in claim["says"] for s in (item["better"], item["than"])} | set(claim.get("ranking", []))
        if named - servers:
            raise SeedDataError(
                f"claim {claim['id']}: no figures for {sorted(named - servers)} in seed {claim['seed']}"
            )


def locate(seeds: Seeds) -> None:
    """Line numbers of every figure; raises where a quote, heading or value is not in the seed's text.
    Without the texts (``source_dir`` absent) the figures keep no line, said in ``problems``."""
    if not seeds.source_dir.is_dir():
        seeds.problems.append(f"the seeds' texts are not at {seeds.source_dir}: quotes not checked")
        return
    texts = {seed: (seeds.source_dir / s["file"]).read_text().splitlines() for seed, s in seeds.studies.items()}
    lines = []
    for row in seeds.figures.itertuples():
        text = texts[row.seed]
        start = _find(text, row.after, 0, row.occurrence, f"{row.seed}/{row.table} {row.server}: heading")
        at = _find(text, row.quote, start, 1, f"{row.seed}/{row.table} {row.server} {row.metric}: quote")
        stated = str(row.value)
        if stated not in row.quote and _trimmed(stated) not in row.quote:
            raise SeedDataError(f"{row.seed}/{row.table} {row.server} {row.metric}: {stated} is not in its quote")
        lines.append(at + 1)
    seeds.figures["line"] = lines
    for table in seeds.tables.itertuples():
        _find(texts[table.seed], table.heading, 0, 1, f"table {table.seed}/{table.table}: heading")
    for claim in seeds.claims:
        _find(texts[claim["seed"]], claim["quote"], 0, 1, f"claim {claim['id']}")
    seeds.located = True


def _trimmed(stated: str) -> str:
    return stated.rstrip("0").rstrip(".") if "." in stated else stated


def _find(text: list[str], needle: str, start: int, occurrence: int, what: str) -> int:
    seen = 0
    for index in range(start, len(text)):
        if needle in text[index]:
            seen += 1
            if seen == occurrence:
                return index
    raise SeedDataError(f"{what}: {needle!r} not found in the seed's text")
