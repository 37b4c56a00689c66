"""The WSGI application every Python server is measured with.

``/`` is the hello world of the seed studies; the other paths are the
workloads that tell worker models apart. Every answer is byte for byte the
one of ``apps/perl/hello.psgi``, with an explicit Content-Length so that
every server can keep the connection alive.

    /        Hello World!
    /json    a small object serialised per request
    /big     a 100 KiB body
    /large   an 8 MiB body (more than the socket buffers hold: the front profile's slow readers)
    /cpu     about 1 ms of CPU work (iterated SHA-256)
    /sleep   a 10 ms wait
    /echo    the request's body back (POST; conformance probes send chunked
             bodies and Expect: 100-continue to it)
    /lint    the hello world under the WSGI validator (wsgiref.validate): a
             server that breaks the WSGI contract fails with its message
    /pid     the id of the process that answered
    /leak    hello world, keeping LEAK_BYTES more of the worker's memory for good (the recycle
             lens's ground truth: its leak per request is known, config app_workloads.leak)
    /hang    hello world after ?s= seconds asleep (HANG_S unless given: longer than any server's
             or client's timeout), a request that never answers (the overload lens's hung request)
    /spin    hello world after ?s= seconds of CPU time spun (SPIN_S unless given), a request that
             keeps its worker busy rather than asleep

With ``SERVERBENCH_EXTRA_SHARE`` set, every hello answer does that share of
its own cost in extra CPU work (``extra_work``: a planted variant).
"""

import functools
import hashlib
import json
import os
import sys
import time
import urllib.parse
from wsgiref.validate import validator

# Servers that load this file by path (uWSGI --wsgi-file, mod_wsgi) may not put its folder on sys.path.
if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from extra_work import extra_work  # noqa: E402

BODY = b"Hello World!"
BIG = b"0123456789abcdef" * 6400  # 100 KiB
LARGE_REPEATS = 524288  # of 16 bytes: 8 MiB
CPU_ROUNDS = 3000  # about 1 ms here; the answer is the final digest
LEAK_BYTES = 4096  # kept per /leak answer: large beside an object's header, so the leak is this
_LEAKED = []
HANG_S = 3600.0  # /hang's sleep unless ?s= says: far past every timeout
SPIN_S = 1.0  # /spin's busy seconds unless ?s= says


def _text(body: bytes, content_type: str = "text/plain"):
    return "200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))], [body]


@functools.cache
def _large() -> bytes:
    # Built at the first /large a worker answers, not at import: held by every process that
    # loads the app, it was 8 MiB of each worker's memory in every lens's figures.
    return b"0123456789abcdef" * LARGE_REPEATS


def _json():
    payload = {"message": "Hello, World!", "server": "serverbench", "numbers": [1, 2, 3]}
    return _text(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode(), "application/json")


def _cpu():
    digest = b"serverbench"
    for _ in range(CPU_ROUNDS):
        digest = hashlib.sha256(digest).digest()
    return _text(digest.hex().encode())


def _sleep():
    time.sleep(0.010)
    return _text(BODY)


def _leak():
    # Built byte by byte (never a calloc'd buffer the kernel need not back): the pages are touched.
    _LEAKED.append(b"x" * LEAK_BYTES)
    return _text(BODY)


def _seconds(environ, default: float) -> float:
    found = urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get("s")
    return float(found[0]) if found else default


def _hang(environ):
    time.sleep(_seconds(environ, HANG_S))
    return _text(BODY)


def _spin(environ):
    # The CPU kept busy (no sleep, no system call to yield in): what a runaway computation does.
    # Seconds of this thread's CPU time, not of the clock: a busy machine stretches it, never shortens it.
    until = time.thread_time() + _seconds(environ, SPIN_S)
    while time.thread_time() < until:
        pass
    return _text(BODY)


def _echo(environ):
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    # A chunked body has no length: the server ends the stream where it ends.
    return _text(stream.read(int(length)) if length else stream.read(), "application/octet-stream")


ROUTES = {
    "/json": _json,
    "/big": lambda: _text(BIG),
    "/large": lambda: _text(_large()),
    "/cpu": _cpu,
    "/sleep": _sleep,
    # Which process answered: the operations check counts each worker's share of the answers.
    "/pid": lambda: _text(str(os.getpid()).encode()),
    "/leak": _leak,
}


def _hello(environ, start_response):
    start_response(*_text(BODY)[:2])
    return [BODY]


def _echo_app(environ, start_response):
    status, headers, body = _echo(environ)
    start_response(status, headers)
    return body


# PEP 3333 lets a server leave out a variable whose value would be empty; CPython's validator
# formats an assertion message with environ["SCRIPT_NAME"] before it judges, so it crashes with
# a KeyError on an environ the spec allows. The linter gets the empty value, and the answer
# says what the server left out, in the spec's words (the conformance check reports it).
MAY_BE_OMITTED = ("SCRIPT_NAME",)
SPEC_WORDS = (
    'PEP 3333: "The following variables must be present, unless their value would be an empty string, in which'
    ' case they may be omitted"; SCRIPT_NAME "may be an empty string, if the application corresponds to the'
    " 'root' of the server\""
)
_LINTED = validator(_hello)


def _lint(environ, start_response):
    omitted = [key for key in MAY_BE_OMITTED if key not in environ]
    if not omitted:
        return _LINTED(environ, start_response)
    # info: the spec allows it, and only the validator's own message formatting stumbles on it.
    notes = [("X-Serverbench-Lint-Note", f"{', '.join(omitted)} absent; {SPEC_WORDS}"),
             ("X-Serverbench-Lint-Outcome", "info")]  # fmt: skip

    def noting(status, headers, exc_info=None):
        return start_response(status, [*headers, *notes], *([exc_info] if exc_info else []))

    return _LINTED({**environ, **dict.fromkeys(omitted, "")}, noting)


def _timed_app(route):
    def app(environ, start_response):
        status, headers, body = route(environ)
        start_response(status, headers)
        return body

    return app


# The conformance job's paths, and the ones that read their query, answered whole by their own WSGI callables.
PROBED = {"/echo": _echo_app, "/lint": _lint, "/hang": _timed_app(_hang), "/spin": _timed_app(_spin)}


def application(environ, start_response):
    path = environ.get("PATH_INFO", "/")
    if path in PROBED:
        return PROBED[path](environ, start_response)
    route = ROUTES.get(path)
    if route is None:
        extra_work()
    status, headers, body = route() if route else _text(BODY)
    start_response(status, headers)
    return body
