"""A small preforking HTTP/1.1 server (keep-alive) whose workers recycle, in a chosen way:

    python recycling.py PORT WORKERS graceful|drop [--max-requests N] [--boot-s S]

Each worker serves one connection at a time (as Starman's do) and, with ``--max-requests N``,
leaves after N requests. graceful: it answers the Nth with ``Connection: close`` and exits;
drop: it exits on reading the Nth, before answering (what a worker killed mid-request does to
its client). The main process forks a new worker whenever one exits, which waits ``--boot-s``
seconds before it accepts (an app that takes that long to load); SIGTERM stops them all.
Every path answers the hello world.
"""

import argparse
import os
import signal
import socket
import sys
import time

BODY = b"Hello World!"


def answer(closing: bool) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(BODY)}\r\n"
    return (head + ("Connection: close\r\n" if closing else "") + "\r\n").encode() + BODY


def serve(listener: socket.socket, mode: str, max_requests: int | None) -> None:
    served = 0
    while True:
        connection, _ = listener.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                buffer += chunk
            if b"\r\n\r\n" not in buffer:
                connection.close()
                break
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            served += 1
            last = max_requests is not None and served >= max_requests
            if last and mode == "drop":
                os._exit(0)  # the request read and never answered: the connection dies with the process
            asked_close = b"connection: close" in head.lower()
            connection.sendall(answer(closing=last or asked_close))
            if last:
                connection.close()
                os._exit(0)
            if asked_close:
                connection.close()
                break


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("workers", type=int)
    parser.add_argument("mode", choices=["graceful", "drop"])
    parser.add_argument("--max-requests", type=int)
    parser.add_argument("--boot-s", type=float, default=0.0)
    args = parser.parse_args()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(128)
    children = set()

    def fork(boot_s: float = 0.0) -> None:
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            time.sleep(boot_s)
            serve(listener, args.mode, args.max_requests)
        children.add(pid)

    def stop(*_) -> None:
        for pid in children:
            os.kill(pid, signal.SIGTERM)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    for _ in range(args.workers):
        fork()
    while True:
        pid, _ = os.wait()
        children.discard(pid)
        fork(args.boot_s)


if __name__ == "__main__":
    main()
