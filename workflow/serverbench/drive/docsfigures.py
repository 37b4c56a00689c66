"""``serverbench docs [--check]`` (``make docs``): the figures the docs quote, written from the data
files in docs/data/ that runs and benchmarks leave there, never typed twice. A figure sits in a
doc between two HTML comments that name it — ``<!-- time:advise -->about 6 min<!-- /time -->`` —
and this command rewrites what is between them from the data; ``--check`` only names the figures
that differ and exits 1 (tests/test_docs.py runs it, so a stale doc fails the tests).

Figures: ``time:PROFILE`` (about N min, from docs/data/profile-times.yaml's ``seconds``),
``time-here:PROFILE`` (the profile's time as docs/configuration.md states it, its ``figure``) and
``table:VIEW`` (a Markdown table of the rows of a run's table kept in docs/data, as
docs/data/views.yaml's VIEW picks and writes them: the CSV a run wrote, unedited, and which of
its rows and columns a doc shows) and ``figure:NAME`` (one figure a sentence quotes, as
docs/data/figures.yaml's NAME writes it from one row of such a CSV, a count of rows, or the
range of a column over rows).

A run's table is often long (a row per server and check); a view may first keep the rows whose
columns equal ``where``'s values, then ``pivot`` them to a row per ``index`` with a field per
value of ``columns`` and each of ``values`` (``{cold_start_s_value}``). A column's form may be a
list: the first whose fields are all there (an interval where there is one, else the figure).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd
import yaml

from serverbench import REPO_ROOT, files
from serverbench.report.section import markdown_table

DATA = REPO_ROOT / "docs" / "data"
MARK = re.compile(r"<!-- (?P<kind>[a-z-]+):(?P<key>[A-Za-z0-9_.-]+) -->(?P<text>.*?)<!-- /(?P=kind) -->", re.DOTALL)


@cache
def profile_times() -> dict[str, dict]:
    """Each profile's recorded time (docs/data/profile-times.yaml)."""
    return yaml.safe_load((DATA / "profile-times.yaml").read_text())


def about(seconds: float) -> str:
    """A time as a person plans by it: whole minutes."""
    return f"about {max(1, round(seconds / 60))} min"


def profile_time(profile: str) -> float | None:
    """A profile's recorded seconds, None where no run of it is recorded."""
    found = profile_times().get(profile)
    return None if found is None else float(found["seconds"])


def profile_time_said(profile: str) -> str | None:
    """A profile's time here as a person plans by it (``about 6 min here``; an estimate says so)."""
    found = profile_times().get(profile)
    if found is None:
        return None
    said = about(found["seconds"]) + (" here, estimated" if found.get("estimated") else " here")
    return said + (f", shortened with {' '.join(found['shortened'])}" if found.get("shortened") else "")


def recorded_run(profile: str) -> dict | None:
    """A profile's recorded whole run (its seconds and the overrides it was shortened with), None
    where there is none or only an estimate."""
    found = profile_times().get(profile)
    if found is None or found.get("estimated"):
        return None
    return {
        "seconds": float(found["seconds"]),
        "shortened": list(found.get("shortened") or []),
        "figure": found["figure"],
        "phases": dict(found.get("phases") or {}),
    }


@cache
def views() -> dict[str, dict]:
    """The tables the docs show from data (docs/data/views.yaml)."""
    return yaml.safe_load((DATA / "views.yaml").read_text())


@cache
def figures() -> dict[str, dict]:
    """The single figures the docs' sentences quote from data (docs/data/figures.yaml)."""
    return yaml.safe_load((DATA / "figures.yaml").read_text())


def _empty(value) -> bool:
    return value is None or (not isinstance(value, str) and pd.isna(value))


def _written(form: str | list[str], row: dict) -> str:
    """``form`` filled from ``row``; blank where a field it names is empty. A list of forms: the
    first whose fields are all there."""
    for one in [form] if isinstance(form, str) else form:
        if not any(_empty(row.get(name)) for name in re.findall(r"{([^{}.\[:!]+)", one)):
            return one.format(**row)
    return ""


def _matching(data: pd.DataFrame, wanted: dict) -> pd.DataFrame:
    """The rows of ``data`` whose columns equal ``wanted``'s values (compared as written)."""
    for key, value in wanted.items():
        data = data[data[key].astype(str) == str(value)]
    return data


# Columns that hold names, never numbers: a short commit such as 24054e9 reads as 2.4e13 otherwise.
TEXT_COLUMNS = {"commit": str, "git_commit": str}


@cache
def _kept(path: Path) -> pd.DataFrame:
    """A kept CSV, read once however many views and figures quote it (never changed in place)."""
    return pd.read_csv(path, dtype=TEXT_COLUMNS)


def view_data(view: dict) -> pd.DataFrame:
    """A view's CSV, its ``where`` rows only, pivoted where it says so: a row per ``index``, the
    field ``{column value}_{value}`` for each value of ``columns`` (joined by ``_`` where they are
    several, each run of other characters than letters and digits a ``_``) and each of ``values``."""
    data = _matching(_kept(DATA / view["csv"]), view.get("where", {}))
    pivot = view.get("pivot")
    if not pivot:
        return data
    index, columns = pivot["index"], pivot["columns"]
    keys = data[columns].astype(str).agg("_".join, axis=1) if isinstance(columns, list) else data[columns].astype(str)
    keys = keys.str.replace(r"\W+", "_", regex=True)  # "slow senders" → a field name: slow_senders
    values = pivot["values"] if isinstance(pivot["values"], list) else [pivot["values"]]
    wide = data.assign(_key=keys.values).pivot(index=index, columns="_key", values=values)
    wide.columns = [f"{key}_{value}" for value, key in wide.columns]
    return wide.reset_index()


def figure(name: str) -> str:
    """One figure of figures.yaml: its ``form`` filled from the one row of its view whose columns
    equal ``row``'s values; with ``{count}``, the number of rows equal to ``count``'s (a list: to
    any of them); or with
    ``{min}`` and ``{max}``, the range of the column ``of`` over the rows equal to ``range``'s (a
    list: the rows equal to any of them); a column's empty cells are no figure."""
    spec = figures()[name]
    data = view_data(spec)
    if "count" in spec:
        return spec["form"].format(count=sum(len(_matching(data, rows)) for rows in _sets(spec["count"])))
    if "range" in spec:
        values = pd.concat([_matching(data, rows)[spec["of"]] for rows in _sets(spec["range"])]).dropna()
        if values.empty:
            raise KeyError(f"figure {name}: no {spec['of']} in the rows of {spec['csv']} that are {spec['range']}")
        return spec["form"].format(min=values.min(), max=values.max())
    return _written(spec["form"], _row(name, spec, data, spec["row"]))


def _sets(wanted: dict | list[dict]) -> list[dict]:
    """A figure's rows: the values they equal, or a list of such (a row equal to any of them)."""
    return wanted if isinstance(wanted, list) else [wanted]


def table(view_name: str) -> str:
    """A view's Markdown table: each of its ``rows`` (the CSV's rows whose columns equal the given
    values, in the view's order; one row each, or a KeyError; ``all``: every row in the CSV's
    order) in its ``columns`` (title: format)."""
    view = views()[view_name]
    data = view_data(view)
    columns = view["columns"]
    rows = data.to_dict("records") if view["rows"] == "all" else [_row(view_name, view, data, w) for w in view["rows"]]
    written = ([_written(form, row) for form in columns.values()] for row in rows)
    return "\n" + markdown_table(list(columns), written, view.get("align")) + "\n"


def _row(view_name: str, view: dict, data: pd.DataFrame, wanted: dict) -> dict:
    """The one row of ``data`` whose columns equal ``wanted``'s values (else a KeyError)."""
    found = _matching(data, wanted)
    if len(found) != 1:
        raise KeyError(f"view {view_name}: {len(found)} rows of {view['csv']} are {wanted}")
    return found.iloc[0].to_dict()


FIGURES: dict[str, Callable[[str], str]] = {
    "time": lambda profile: about(profile_times()[profile]["seconds"]),
    "time-here": lambda profile: " ".join(str(profile_times()[profile]["figure"]).split()),
    "table": table,
    "figure": figure,
}


@dataclass(frozen=True)
class Stale:
    """A figure in a doc that differs from its data."""

    path: Path
    kind: str
    key: str
    written: str
    data: str


def documents() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def render(text: str) -> tuple[str, list[tuple[str, str, str, str]]]:
    """The text with every marked figure written from its data, and those that differed
    (kind, key, as written, from the data). An unknown figure or key raises KeyError."""
    changed = []

    def written(match: re.Match) -> str:
        kind, key, old = match["kind"], match["key"], match["text"]
        new = FIGURES[kind](key)
        if new != old:
            changed.append((kind, key, old, new))
        return f"<!-- {kind}:{key} -->{new}<!-- /{kind} -->"

    return MARK.sub(written, text), changed


def stale(paths: list[Path] | None = None) -> list[Stale]:
    """Every marked figure of the docs that differs from its data."""
    found = []
    for path in paths or documents():
        found += [Stale(path, *change) for change in render(path.read_text())[1]]
    return found


def run(args: argparse.Namespace) -> int:
    differing = stale()
    for figure in differing:
        where = figure.path.relative_to(REPO_ROOT)
        if "\n" in figure.data:  # a table: which one, not both
            print(f"{where}: {figure.kind}:{figure.key} differs from its data")
        else:
            print(f"{where}: {figure.kind}:{figure.key} says {figure.written!r}, its data {figure.data!r}")
    if args.check:
        return 1 if differing else 0
    for path in sorted({figure.path for figure in differing}):
        files.write_atomic(path, render(path.read_text())[0])
    print(f"serverbench docs: {len(differing)} figure(s) written from docs/data/")
    return 0


def keep(name: str, table: pd.DataFrame) -> None:
    """A benchmark's table kept unedited in docs/data/NAME, then every doc's figures written
    again from the data (what `serverbench docs` does)."""
    keep_all({name: table})


def keep_all(tables: dict[str, pd.DataFrame]) -> None:
    """A benchmark's tables kept unedited in docs/data (a name each), then the docs written
    again once: a doc may quote a table that the same run writes for the first time."""
    for name, table in tables.items():
        files.write_atomic(DATA / name, table.to_csv(index=False))
    _kept.cache_clear()
    run(argparse.Namespace(check=False))
