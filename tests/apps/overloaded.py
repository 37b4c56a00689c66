"""A planted HTTP server that fails past its capacity in one known way (tests/test_overload.py),
each way made by the server, not by the machine's speed:

- ``shed PORT N HOLD_S``: threaded, each request held HOLD_S; a request that finds N in flight is
  answered 503 at once (a server that sheds load on purpose);
- ``queue PORT HOLD_S``: one thread, each request HOLD_S, a deep listen queue: every request is
  answered, later and later (a server that queues without bound);
- ``backlog PORT BACKLOG HOLD_S``: one thread listening with BACKLOG; its first request held
  HOLD_S, the rest answered at once: while it holds, the accept queue fills and the kernel drops
  further SYNs (the client times out connecting);
- ``hold PORT HOLD_S``: threaded, every request held HOLD_S, then answered: the requests in
  flight grow by the rate times HOLD_S exactly (what the client must have connections for);
- ``slow PORT SLOW_S FOR_S``: threaded, each request SLOW_S until FOR_S after its first request,
  then at once (a server that comes back).

``--backlog N`` after the mode's numbers: listen with N (the lens's `set` backlog); without it,
each mode's own.
"""

import socket
import sys
import threading
import time

BODY = b"Hello World!"


def asked(connection: socket.socket) -> bool:
    """Whether a request came on the connection (read to its head's end); a connection closed
    without one (a readiness probe) is closed here and counts for nothing."""
    connection.settimeout(30)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            connection.close()
            return False
        data += chunk
    return True


def answer(connection: socket.socket, status: str) -> None:
    with connection:
        fields = f"Content-Type: text/plain\r\nContent-Length: {len(BODY)}\r\nConnection: close"
        head = f"HTTP/1.1 {status}\r\n{fields}\r\n\r\n"
        connection.sendall(head.encode() + BODY)


TOLD_BACKLOG: list[int] = []  # --backlog N: what every mode listens with


def listener(port: int, backlog: int) -> socket.socket:
    backlog = TOLD_BACKLOG[0] if TOLD_BACKLOG else backlog
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(backlog)
    return server


def shed(port: int, most: int, hold_s: float) -> None:
    server, lock, in_flight = listener(port, 1024), threading.Lock(), [0]

    def serve(connection):
        if not asked(connection):
            return
        with lock:
            full = in_flight[0] >= most
            in_flight[0] += 0 if full else 1
        if full:
            answer(connection, "503 Service Unavailable")
            return
        time.sleep(hold_s)
        answer(connection, "200 OK")
        with lock:
            in_flight[0] -= 1

    while True:
        threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()


def queue(port: int, hold_s: float) -> None:
    server = listener(port, 4096)
    while True:
        connection = server.accept()[0]
        if asked(connection):
            time.sleep(hold_s)
            answer(connection, "200 OK")


def backlog(port: int, size: int, hold_s: float) -> None:
    server, first = listener(port, size), True
    while True:
        connection = server.accept()[0]
        if not asked(connection):
            continue
        if first:
            time.sleep(hold_s)
            first = False
        answer(connection, "200 OK")


def hold(port: int, hold_s: float) -> None:
    server = listener(port, 4096)

    def serve(connection):
        if asked(connection):
            time.sleep(hold_s)
            answer(connection, "200 OK")

    while True:
        threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()


def slow(port: int, slow_s: float, for_s: float) -> None:
    server, since = listener(port, 1024), []

    def serve(connection):
        if not asked(connection):
            return
        if not since:
            since.append(time.monotonic())
        if time.monotonic() - since[0] < for_s:
            time.sleep(slow_s)
        answer(connection, "200 OK")

    while True:
        threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()


if __name__ == "__main__":
    mode, port, *numbers = sys.argv[1:]
    if "--backlog" in numbers:
        at = numbers.index("--backlog")
        TOLD_BACKLOG.append(int(numbers[at + 1]))
        numbers = numbers[:at] + numbers[at + 2 :]
    kinds = {"shed": (int, float), "queue": (float,), "backlog": (int, float), "hold": (float,), "slow": (float, float)}
    values = [kind(number) for kind, number in zip(kinds[mode], numbers, strict=True)]
    modes = {"shed": shed, "queue": queue, "backlog": backlog, "hold": hold, "slow": slow}
    modes[mode](int(port), *values)
