"""A small HTTP/1.1 server (keep-alive) whose reload, on SIGHUP, is chosen:

    python reloading.py PORT graceful|drop|die

graceful: it keeps serving every connection; drop: it closes its listening socket
and every open connection, stays away DOWN_S, then listens again (what a server
that restarts abruptly does to its clients); die: it exits.
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

    def setup(self):
        super().setup()
        self.server.open_connections.add(self.connection)

    def finish(self):
        self.server.open_connections.discard(self.connection)
        super().finish()

    def do_GET(self):
        body = str(os.getpid()).encode() if self.path == "/pid" else BODY  # one process answers all
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

    def __init__(self, port):
        super().__init__(("127.0.0.1", port), Hello)
        self.open_connections = set()


def serve(port):
    server = Server(port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    current = [serve(port)]
    reloads = threading.Semaphore(0)
    signal.signal(signal.SIGHUP, lambda *_: reloads.release())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        reloads.acquire()
        if mode == "die":
            sys.exit(3)
        if mode == "drop":
            server = current[0]
            server.shutdown()
            server.server_close()
            for connection in list(server.open_connections):
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                connection.close()
            time.sleep(DOWN_S)
            current[0] = serve(port)


if __name__ == "__main__":
    main()
