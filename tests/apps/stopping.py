"""A one-worker HTTP server (a connection per request, as gunicorn's sync worker) whose stop
on SIGTERM is chosen:

    python stopping.py PORT drop|drain|ignore [--graceful-timeout S] [--linger S]

drop: the request in hand finished, it closes its listener and exits: every connection still
in the accept queue is reset by the kernel (gunicorn#3397); drain: it first accepts and answers
every connection already queued, then closes and exits; ignore: it goes on serving, as a
server whose TERM is not a stop (uWSGI without --die-on-term). ``--linger S``: after the
signal it goes on accepting and answering for S seconds before it stops (what a preStop sleep
gives a server that has no delay of its own). A request still running
``--graceful-timeout`` seconds after the signal (default: none) is cut, its connection reset,
and the server exits 1. Paths: ``/hold`` answers once the signal has come (at most 60 s),
``/slow?s=N`` after N seconds, any other at once.
"""

import argparse
import os
import selectors
import signal
import socket
import struct
import time
from urllib.parse import parse_qs, urlsplit

BODY = b"Hello World!"
POLL_S = 0.01
HOLD_AT_MOST_S = 60
TERMED_AT: list[float] = []


class Cut(Exception):
    """The graceful timeout passed while a request was running."""


def wait(seconds: float, until_termed: bool, graceful_timeout: float | None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if until_termed and TERMED_AT:
            return
        if TERMED_AT and graceful_timeout is not None and time.monotonic() > TERMED_AT[0] + graceful_timeout:
            raise Cut
        time.sleep(POLL_S)


def answer(conn: socket.socket, graceful_timeout: float | None) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    target = urlsplit(data.split(b" ", 2)[1].decode())
    if target.path == "/hold":
        wait(HOLD_AT_MOST_S, True, graceful_timeout)
    elif target.path == "/slow":
        wait(float(parse_qs(target.query)["s"][0]), False, graceful_timeout)
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\nConnection: close\r\n\r\n".encode()
    conn.sendall(head + BODY)


def serve_one(listener: socket.socket, graceful_timeout: float | None) -> bool:
    """Accept one connection and answer it (False: none was waiting)."""
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.setblocking(True)
    try:
        answer(conn, graceful_timeout)
    except Cut:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset
        conn.close()
        os._exit(1)
    except OSError:
        pass
    conn.close()
    return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("mode", choices=["drop", "drain", "ignore"])
    parser.add_argument("--graceful-timeout", type=float, default=None)
    parser.add_argument("--linger", type=float, default=0)
    args = parser.parse_args()
    if args.mode == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: TERMED_AT.append(time.monotonic()))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(64)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    while not TERMED_AT or time.monotonic() < TERMED_AT[0] + args.linger:
        if selector.select(POLL_S):
            serve_one(listener, args.graceful_timeout)
    if args.mode == "drain":
        while serve_one(listener, args.graceful_timeout):
            pass
    listener.close()


if __name__ == "__main__":
    main()
