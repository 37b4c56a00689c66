"""A hello world that answers its first few requests (SERVERBENCH_STALL_AFTER, per worker
process: its verification and a little more) and then never answers again: every later
request waits for good. A server that stalls under load, created rather than hoped for."""

import os
import threading
import time

BODY = b"Hello World!"
ANSWERS = int(os.environ.get("SERVERBENCH_STALL_AFTER", "3"))
_count = 0
_lock = threading.Lock()


def application(environ, start_response):
    global _count
    with _lock:
        _count += 1
        stalls = _count > ANSWERS
    while stalls:
        time.sleep(3600)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(BODY)))])
    return [BODY]
