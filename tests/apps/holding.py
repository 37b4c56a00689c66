"""A WSGI app whose ``/hold`` answers only once its process has been sent SIGTERM (at most
60 s later): the request a worker is busy with when a stop comes, made so by the condition,
not by a time (tests/test_shutdown.py). Any other path answers at once.

The first ``/hold`` chains a SIGTERM handler before the server's own (gunicorn's sync worker
runs a request on its main thread, where a handler may be set): it notes the signal and
calls the server's handler, which still decides how the worker ends."""

import signal
import threading

BODY = b"Hello World!"
TERMED = threading.Event()
HOLD_AT_MOST_S = 60


def _chain_term() -> None:
    previous = signal.getsignal(signal.SIGTERM)

    def noted(signum, frame):
        TERMED.set()
        if callable(previous):
            previous(signum, frame)

    if previous is not noted:
        signal.signal(signal.SIGTERM, noted)


def application(environ, start_response):
    if environ.get("PATH_INFO") == "/hold":
        _chain_term()
        TERMED.wait(HOLD_AT_MOST_S)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(BODY)))])
    return [BODY]
