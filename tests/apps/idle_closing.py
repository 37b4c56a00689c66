"""An HTTP/1.1 server that keeps connections alive and closes idle ones at a known timeout, for
the balancer's idle pool (tests/test_idlepool.py): ``idle_closing.py PORT THREADS KEEPALIVE_S
MODE``. A fixed pool of THREADS threads, each accepting one connection and serving it for its
whole life, as a sync worker does: while THREADS connections are held, a new one waits in the
accept queue (gunicorn#1296's starved client).

MODE says how an idle connection ends:

- ``timer``: closed (a FIN) once idle KEEPALIVE_S, as most servers' idle timers do;
- ``arrival``: the idle timer's race made certain: a request that arrives after KEEPALIVE_S idle
  is not answered, its connection closed with the request unread (a reset), as a server whose
  timer fires the moment the balancer's request is on its way.

Every answer is ``Hello World!``; the request's head is read, no body (GET only).
"""

import socket
import struct
import sys
import threading
import time

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\nHello World!"


def read_head(conn: socket.socket) -> bool:
    """Read one request's head; False where the client closed first."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        chunk = conn.recv(4096)
        if not chunk:
            return False
        buffer += chunk
    return True


def serve(conn: socket.socket, keepalive_s: float, mode: str) -> None:
    answered_at = None
    while True:
        conn.settimeout(keepalive_s if mode == "timer" else None)
        try:
            if not read_head(conn):
                return
        except TimeoutError:
            return  # idle KEEPALIVE_S: closed, the caller's close sends the FIN
        if mode == "arrival" and answered_at is not None and time.monotonic() - answered_at >= keepalive_s:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return  # closed with the request unread: a reset
        conn.sendall(ANSWER)
        answered_at = time.monotonic()


def worker(listener: socket.socket, keepalive_s: float, mode: str) -> None:
    while True:
        conn, _ = listener.accept()
        try:
            serve(conn, keepalive_s, mode)
        except OSError:
            pass
        finally:
            conn.close()


def main() -> None:
    port, threads, keepalive_s, mode = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    listener = socket.create_server(("127.0.0.1", port), backlog=64)
    for _ in range(threads):
        threading.Thread(target=worker, args=(listener, keepalive_s, mode), daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
