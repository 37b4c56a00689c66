"""WSGI apps that misbehave on purpose, for parser and fault tests."""

import threading
import time


def server_error(environ, start_response):
    body = b"Internal Server Error"
    start_response("500 Internal Server Error", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def slow(environ, start_response):
    time.sleep(2)
    body = b"Hello World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def wrong_body(environ, start_response):
    body = b"Goodbye World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


HOG = []


def memory_hog(environ, start_response):
    """Allocates (and touches) 64 MiB more on every request and keeps it."""
    HOG.append(b"\x01" * (64 * 1024 * 1024))  # bytes are written, so the pages are charged
    body = b"Hello World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def crash_after(environ, start_response, _served=[0]):  # noqa: B006 (a per-process counter on purpose)
    """Answers 300 requests, then the whole process dies mid-load."""
    import os

    _served[0] += 1
    if _served[0] > 300:
        os._exit(17)
    body = b"Hello World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def _stalling(answers: int):
    """An app that answers ``answers`` requests, then never again (each later request waits an hour)."""
    served = [0]

    def app(environ, start_response):
        served[0] += 1
        if served[0] > answers:
            time.sleep(3600)
        body = b"Hello World!"
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]

    return app


# The verification's request is answered (this HTTP/1.0 server closes after it), then:
stall_after_verify = _stalling(1)  # nothing more
stall_after_one_more = _stalling(2)  # one answer in the whole load


def _answer_after(seconds: float):
    def app(environ, start_response):
        time.sleep(seconds)
        body = b"Hello World!"
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]

    return app


# Throughput set by sleeping, not by the machine's speed: the same in every repeat.
steady_10ms = _answer_after(0.010)
steady_20ms = _answer_after(0.020)  # half steady_10ms's throughput, on any machine


def _starts() -> int:
    """How many times this app has started, counted in the file $SERVERBENCH_TEST_COUNTER."""
    import os
    from pathlib import Path

    counter = Path(os.environ["SERVERBENCH_TEST_COUNTER"])
    starts = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(starts))
    return starts


def alternating(environ, start_response, _app=[]):  # noqa: B006 (chosen once per process)
    """5 ms per answer in odd-numbered starts, 100 ms in even ones: repeats that never agree.
    $SERVERBENCH_TEST_PHASE=1 swaps them (100 ms first), for a twin alternating out of step."""
    import os

    if not _app:
        fast = (_starts() + int(os.environ.get("SERVERBENCH_TEST_PHASE", "0"))) % 2
        _app.append(_answer_after(0.005 if fast else 0.100))
    return _app[0](environ, start_response)


def _slowing_after(answers: int, before_s: float, after_s: float):
    """``before_s`` of sleep per answer for the first ``answers`` answers of the process, then
    ``after_s``: the slowdown comes at a request count, and both rates are set by sleeping,
    so it falls at the same point of a run on any machine."""
    served, lock = [0], threading.Lock()

    def app(environ, start_response):
        with lock:
            served[0] += 1
            slow = served[0] > answers
        time.sleep(after_s if slow else before_s)
        body = b"Hello World!"
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]

    return app


# Four connections at 10 ms an answer: about 400 answers a second, so 1 s of warm-up takes
# about 400 and the 1,200th falls about 2 s into a 4 s load; then tenfold slower.
slows_down_mid_run = _slowing_after(1200, 0.010, 0.100)


def spin_5ms_cpu(environ, start_response):
    """5 ms of this thread's CPU time per answer, spent spinning: on any machine the
    answers a second take is set by the CPU time the server may have, so a CPU quota
    of 0.8 (and nothing else) makes it 0.8 times as fast."""
    end = time.thread_time() + 0.005
    while time.thread_time() < end:
        pass
    body = b"Hello World!"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
