"""tinyserve: the tests' own small HTTP/1.1 server (keep-alive) whose reload is chosen.

Built as "releases" that differ in known ways (tests/test_releases.py writes
``tinyserve_release.py`` beside it in each release's wheel):

    RELOAD = "graceful" | "drop"   what SIGHUP does (below)
    EXTRA_ITERATIONS = N           a fixed amount of extra work in every answer (sum(range(N)))

    tinyserve HOST PORT            serve the hello world
    tinyserve --version            print the release

and run as a script by tests/apps/reloading.py. On SIGHUP, graceful: it keeps serving every
connection; drop: it closes its listening socket and every open connection, stays away
DOWN_S, then listens again (what a server that restarts abruptly does to its clients); die:
it exits. ``/pid`` answers the id of the process (one process answers all).
"""

import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DOWN_S = 0.5
BODY = b"Hello World!"


class Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed ACK (40 ms an answer).
    disable_nagle_algorithm = True
    extra_iterations = 0

    def setup(self):
        super().setup()
        self.server.open_connections.add(self.connection)

    def finish(self):
        self.server.open_connections.discard(self.connection)
        super().finish()

    def do_GET(self):
        if self.server.dropping.is_set():
            # Accepted before the drop but set up after it had closed the open connections:
            # answering now would be an answer from a server that is away.
            self.close_connection = True
            return
        if self.extra_iterations:
            sum(range(self.extra_iterations))
        body = str(os.getpid()).encode() if self.path == "/pid" else BODY
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host, port):
        super().__init__((host, port), Hello)
        self.open_connections = set()
        self.dropping = threading.Event()


def serve(host, port):
    server = Server(host, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def drop(server):
    # Set first: serve_forever answers until shutdown() returns (up to its 0.5 s poll), and a
    # connection accepted just before may join open_connections after they were closed.
    server.dropping.set()
    server.shutdown()
    server.server_close()
    for connection in list(server.open_connections):
        try:
            connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        connection.close()


def run(host: str, port: int, reload: str, extra_iterations: int = 0) -> None:
    """Serve until SIGTERM, reloading on SIGHUP as ``reload`` says."""
    Hello.extra_iterations = extra_iterations
    current = [serve(host, port)]
    reloads = threading.Semaphore(0)
    signal.signal(signal.SIGHUP, lambda *_: reloads.release())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        # With a timeout: a signal the kernel gives the serving thread leaves a main thread
        # blocked for good on a lock, and Python runs its handlers in the main thread only.
        if not reloads.acquire(timeout=0.2):
            continue
        if reload == "die":
            sys.exit(3)
        if reload == "drop":
            back_at = time.monotonic() + DOWN_S
            drop(current[0])
            time.sleep(max(0.0, back_at - time.monotonic()))
            current[0] = serve(host, port)


def main():
    """The console script of a release: its behaviour from tinyserve_release."""
    from importlib.metadata import version

    from tinyserve_release import EXTRA_ITERATIONS, RELOAD

    if sys.argv[1:] == ["--version"]:
        print(f"tinyserve {version('tinyserve')}")
        return
    run(sys.argv[1], int(sys.argv[2]), RELOAD, EXTRA_ITERATIONS)
