"""Creates the reference apps' database: TechEmpower's two tables, World (10,000 rows of
id and randomNumber) and Fortune (its twelve fortunes), in a SQLite file or in the
PostgreSQL database a cell started (the descriptor it wrote, data/database.json).

Run by a cell before its server starts (the apps' `setup` in config.yaml), so every cell
begins with the same rows: the numbers come from a fixed seed, and `updates` of one
cell never reach another. A SQLite file and its directory are writable by every user, as
servers that drop privileges (mod_wsgi's www-data, Unit's applications) write to it.
Names are quoted ("World", "randomNumber"): PostgreSQL keeps their case as Django's
models and the apps' SQL name them, and SQLite reads them the same.
"""

import json
import random
import sqlite3
import sys
from pathlib import Path

APP_SITE = "/opt/serverbench/app-site"  # psycopg, where the frameworks are (world.py)

WORLD_ROWS = 10_000
FORTUNES = [
    "fortune: No such file or directory",
    "A computer scientist is someone who fixes things that aren't broken.",
    "After enough decimal places, nobody gives a damn.",
    "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
    "A computer program does what you tell it to do, not what you want it to do.",
    "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen",
    "Any program that runs right is obsolete.",
    "A list is only as strong as its weakest link. — Donald Knuth",
    "Feature: A bug with seniority.",
    "Computers make very fast, very accurate mistakes.",
    '<script>alert("This should not be displayed in a browser alert box.");</script>',
    "フレームワークのベンチマーク",
]


CREATE = (
    'CREATE TABLE "World" (id INTEGER PRIMARY KEY, "randomNumber" INTEGER NOT NULL)',
    'CREATE TABLE "Fortune" (id INTEGER PRIMARY KEY, message TEXT NOT NULL)',
)


def rows() -> tuple[list, list]:
    numbers = random.Random(0)
    return [(i, numbers.randint(1, 10_000)) for i in range(1, WORLD_ROWS + 1)], list(enumerate(FORTUNES, start=1))


def make_sqlite(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o777)  # SQLite writes its journal beside the file
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    world, fortunes = rows()
    with sqlite3.connect(partial) as db:
        for statement in CREATE:
            db.execute(statement)
        db.executemany('INSERT INTO "World" VALUES (?, ?)', world)
        db.executemany('INSERT INTO "Fortune" VALUES (?, ?)', fortunes)
    db.close()
    partial.chmod(0o666)
    partial.replace(path)


def make_postgresql(where: dict) -> None:
    sys.path.insert(0, APP_SITE)
    import psycopg

    world, fortunes = rows()
    keys = ("host", "port", "dbname", "user")
    with psycopg.connect(**{key: where[key] for key in keys}) as db, db.cursor() as cursor:
        cursor.execute('DROP TABLE IF EXISTS "World", "Fortune"')
        for statement in CREATE:
            cursor.execute(statement)
        for table, values in (("World", world), ("Fortune", fortunes)):
            with cursor.copy(f'COPY "{table}" FROM STDIN') as copy:
                for row in values:
                    copy.write_row(row)
    with psycopg.connect(**{key: where[key] for key in keys}, autocommit=True) as db:
        db.execute("ANALYZE")


def make(path: Path) -> None:
    """Fills the database `path` names: a .json descriptor (PostgreSQL's or SQLite's), or a SQLite file."""
    where = json.loads(path.read_text()) if path.suffix == ".json" else {"engine": "sqlite", "path": str(path)}
    if where["engine"] == "postgresql":
        make_postgresql(where)
    else:
        make_sqlite(Path(where["path"]))


if __name__ == "__main__":
    make(Path(sys.argv[1]))
