"""Flask serving TechEmpower's test types over SQLite or PostgreSQL (the DB-API as it is:
sqlite3 or psycopg, a connection per worker thread, opened in the worker: a connection
never crosses a fork)."""

import os
import sys
import threading

# Servers given the app's file (uWSGI's --wsgi-file, mod_wsgi) do not put its directory on
# the path, as servers given a module and a directory do; a WSGI file commonly does it itself.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import world  # noqa: E402  (before the frameworks: puts their directory on the path)

# isort: split
from flask import Flask, jsonify, render_template, request  # noqa: E402

# Its own directory, not found from __name__ where a server names the module (mod_wsgi).
app = Flask(__name__, root_path=os.path.dirname(os.path.abspath(__file__)))
app.json.sort_keys = False
_local = threading.local()


_SELECT_ROW = world.sql('SELECT "randomNumber" FROM "World" WHERE id = ?')
_UPDATE_ROW = world.sql('UPDATE "World" SET "randomNumber" = ? WHERE id = ?')


def db():
    if getattr(_local, "connection", None) is None:
        _local.connection = world.connect()
    return _local.connection


def _row(connection, world_id: int) -> dict:
    number = connection.execute(_SELECT_ROW, (world_id,)).fetchone()[0]
    return {"id": world_id, "randomNumber": number}


@app.route("/plaintext")
def plaintext():
    return "Hello, World!", 200, {"Content-Type": "text/plain"}


@app.route("/json")
def json():
    return jsonify(message="Hello, World!")


@app.route("/db")
def single_query():
    return jsonify(_row(db(), world.random_id()))


@app.route("/queries")
def queries():
    connection = db()
    return jsonify([_row(connection, i) for i in world.random_ids(world.query_count(request.args.get("queries")))])


@app.route("/updates")
def updates():
    connection = db()
    rows = [_row(connection, i) for i in world.random_ids(world.query_count(request.args.get("queries")))]
    for row in rows:
        row["randomNumber"] = world.random_id()
    with world.transaction(connection):
        # In id order: two transactions taking their rows in opposite orders deadlock.
        changes = sorted(((row["randomNumber"], row["id"]) for row in rows), key=lambda change: change[1])
        connection.cursor().executemany(_UPDATE_ROW, changes)
    return jsonify(rows)


@app.route("/fortunes")
def fortunes():
    rows = db().execute('SELECT id, message FROM "Fortune"').fetchall()
    return render_template("fortunes.html", fortunes=world.sorted_fortunes(rows))


application = app
