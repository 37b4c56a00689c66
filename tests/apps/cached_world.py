"""A WSGI app that answers TechEmpower's /db from a cache: it reads one row of the
database the cell started (the descriptor in SERVERBENCH_DATABASE) once, then answers
every request with it. Its answers pass the verifier; only the database's own counters
show they did not come from the database."""

import json
import os
import sys

sys.path.insert(0, "/opt/serverbench/app-site")  # psycopg (envs/app-site.txt)

import psycopg  # noqa: E402

_cached: bytes | None = None


def _row() -> bytes:
    where = json.load(open(os.environ["SERVERBENCH_DATABASE"]))
    keys = ("host", "port", "dbname", "user")
    with psycopg.connect(**{key: where[key] for key in keys}) as db:
        number = db.execute('SELECT "randomNumber" FROM "World" WHERE id = 1').fetchone()[0]
    return json.dumps({"id": 1, "randomNumber": number}).encode()


def application(environ, start_response):
    global _cached
    if _cached is None:
        _cached = _row()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(_cached)))])
    return [_cached]
