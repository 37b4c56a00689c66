"""Creates the reference apps' database: TechEmpower's two tables, World (10,000 rows of
id and randomNumber) and Fortune (its twelve fortunes), in a SQLite file.

Run by a cell before its server starts (the apps' `setup` in config.yaml), so every cell
begins with the same rows: the numbers come from a fixed seed, and `updates` of one
cell never reach another. The file and its directory are writable by every user, as
servers that drop privileges (mod_wsgi's www-data, Unit's applications) write to it.
"""

import random
import sqlite3
import sys
from pathlib import Path

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


def make(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o777)  # SQLite writes its journal beside the file
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    numbers = random.Random(0)
    with sqlite3.connect(partial) as db:
        db.execute("CREATE TABLE World (id INTEGER PRIMARY KEY, randomNumber INTEGER NOT NULL)")
        db.executemany(
            "INSERT INTO World VALUES (?, ?)", ((i, numbers.randint(1, 10_000)) for i in range(1, WORLD_ROWS + 1))
        )
        db.execute("CREATE TABLE Fortune (id INTEGER PRIMARY KEY, message TEXT NOT NULL)")
        db.executemany("INSERT INTO Fortune VALUES (?, ?)", enumerate(FORTUNES, start=1))
    db.close()
    partial.chmod(0o666)
    partial.replace(path)


if __name__ == "__main__":
    make(Path(sys.argv[1]))
