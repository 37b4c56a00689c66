"""A hello world that stops answering in phases of its own: for 200 ms of every
500 ms (by the wall clock, so every worker pauses together) each request waits
until the pause is over. Between pauses it answers at full speed: its bursts
are no measure of its throughput (serverbench.decide.fullspeed must see that)."""

import time

PERIOD_S, PAUSE_S = 0.5, 0.2
BODY = b"Hello World!"


def application(environ, start_response):
    phase = time.time() % PERIOD_S
    if phase < PAUSE_S:
        time.sleep(PAUSE_S - phase)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(BODY)))])
    return [BODY]
