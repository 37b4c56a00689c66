"""What the reference framework apps share: where their frameworks and database are, and
TechEmpower's rules for its test types (https://github.com/TechEmpower/FrameworkBenchmarks/wiki/Project-Information-Framework-Tests-Overview).

The frameworks come from one directory outside every interpreter (scripts/install puts
Flask and Django there, envs/app-site.txt), so gunicorn's Python, Debian's uWSGI plugin,
mod_wsgi's venv and Unit's module all import the same versions; it goes first on the path.
The database is the one a cell's setup filled (apps/data/make_world.py): where the
cell started PostgreSQL, the descriptor it wrote in the run directory's copy of apps/
(data/database.json) says where; else the SQLite file beside it. SERVERBENCH_DATABASE names
another (a .sqlite file or a .json descriptor).
"""

import json
import os
import random
import sqlite3
import sys
from contextlib import contextmanager
from pathlib import Path

APP_SITE = os.environ.get("SERVERBENCH_APP_SITE", "/opt/serverbench/app-site")
if APP_SITE not in sys.path:
    sys.path.insert(0, APP_SITE)

DATA = Path(__file__).resolve().parents[2] / "data"
WORLD_ROWS = 10_000
ADDED_FORTUNE = "Additional fortune added at request time."


def descriptor(named: str | None = None) -> dict:
    """Where the database is: {"engine": "sqlite", "path": ...} or {"engine": "postgresql",
    "host": <socket directory>, "port", "dbname", "user"}."""
    path = Path(named) if named else DATA / "database.json"
    if path.suffix == ".json":
        if path.exists() or named:
            return json.loads(path.read_text())
        path = DATA / "world.sqlite"
    return {"engine": "sqlite", "path": str(path)}


DATABASE = descriptor(os.environ.get("SERVERBENCH_DATABASE"))
POSTGRESQL = DATABASE["engine"] == "postgresql"


def connect():
    """A DB-API connection, opened where it is used (never across a fork). PostgreSQL's
    autocommits (a read is its own transaction, as SQLite's are); `transaction` groups writes."""
    if POSTGRESQL:
        import psycopg

        keys = ("host", "port", "dbname", "user")
        return psycopg.connect(**{key: DATABASE[key] for key in keys}, autocommit=True)
    return sqlite3.connect(DATABASE["path"], timeout=10, check_same_thread=False)


def django_database() -> dict:
    """Django's DATABASES entry for it; a connection held per worker thread (CONN_MAX_AGE None)."""
    if POSTGRESQL:
        where = {key.upper(): DATABASE[key] for key in ("user", "host", "port")}
        return {"ENGINE": "django.db.backends.postgresql", "NAME": DATABASE["dbname"], **where, "CONN_MAX_AGE": None}
    sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": DATABASE["path"], "OPTIONS": {"timeout": 10}}
    return {**sqlite, "CONN_MAX_AGE": None}


def sql(text: str) -> str:
    """A statement written with ? parameters, in the driver's own style (psycopg's %s)."""
    return text.replace("?", "%s") if POSTGRESQL else text


@contextmanager
def transaction(connection):
    """Statements committed together (sqlite3's connection context, psycopg's transaction)."""
    with connection.transaction() if POSTGRESQL else connection:
        yield


def query_count(raw: str | None) -> int:
    """The `queries` parameter: 1 where missing or not a number, else clamped to 1..500."""
    try:
        return min(500, max(1, int(raw)))
    except (TypeError, ValueError):
        return 1


def random_id() -> int:
    return random.randint(1, WORLD_ROWS)


def random_ids(count: int) -> list[int]:
    """Distinct ids: an update of the same row twice in one request would deadlock elsewhere."""
    return random.sample(range(1, WORLD_ROWS + 1), count)


def sorted_fortunes(rows) -> list[tuple[int, str]]:
    """Every fortune and the one added at request time, sorted by message."""
    return sorted([*rows, (0, ADDED_FORTUNE)], key=lambda row: row[1])
