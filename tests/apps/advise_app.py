"""A WSGI app whose cost per request is planted, for the advise profile's ground truth:

    /spin   CPU only: SPIN_ROUNDS rounds of SHA-256 (no waiting)
    /wait   a 20 ms wait, no CPU
    /       hello world

With ``ADVISE_HOLD_MB`` set, every process that imports it holds that many MB of its own
(written, so resident): a worker's memory is known.
"""

import hashlib
import os
import time

SPIN_ROUNDS = 20000
WAIT_S = 0.020
HELD = b"x" * (int(os.environ.get("ADVISE_HOLD_MB", "0")) * 1024 * 1024)


def _spin() -> bytes:
    digest = b"serverbench"
    for _ in range(SPIN_ROUNDS):
        digest = hashlib.sha256(digest).digest()
    return digest.hex().encode()


def _wait() -> bytes:
    time.sleep(WAIT_S)
    return b"waited"


ROUTES = {"/spin": _spin, "/wait": _wait}


def application(environ, start_response):
    route = ROUTES.get(environ.get("PATH_INFO", "/"))
    body = route() if route else b"Hello World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
