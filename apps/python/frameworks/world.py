"""What the reference framework apps share: where their frameworks and database are, and
TechEmpower's rules for its test types (https://github.com/TechEmpower/FrameworkBenchmarks/wiki/Project-Information-Framework-Tests-Overview).

The frameworks come from one directory outside every interpreter (scripts/install puts
Flask and Django there, envs/app-site.txt), so gunicorn's Python, Debian's uWSGI plugin,
mod_wsgi's venv and Unit's module all import the same versions; it goes first on the path.
The database is the file a cell's setup made (apps/data/make_world.py) in the run
directory's copy of apps/, unless SERVERBENCH_DB names another.
"""

import os
import random
import sys
from pathlib import Path

APP_SITE = os.environ.get("SERVERBENCH_APP_SITE", "/opt/serverbench/app-site")
if APP_SITE not in sys.path:
    sys.path.insert(0, APP_SITE)

DATABASE = os.environ.get("SERVERBENCH_DB") or str(Path(__file__).resolve().parents[2] / "data" / "world.sqlite")
WORLD_ROWS = 10_000
ADDED_FORTUNE = "Additional fortune added at request time."


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
