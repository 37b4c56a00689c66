"""A small HTTP/1.1 server whose answers have neither Content-Length nor chunked
encoding ("Hello World!" to every request), for the verifier's framing tests:

    closes      closes the connection after each answer: the close ends it (close-delimited)
    keeps-open  keeps the connection open after each answer and answers the next request on it,
                closing only after --idle seconds without one (as uWSGI's --http11-socket does)

    python unframed_server.py PORT --mode closes|keeps-open [--idle SECONDS]
"""

import argparse
import socketserver

from http_server import serve  # beside this file: its directory is on the path when run

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nHello World!"


class Handler(socketserver.StreamRequestHandler):
    mode = "closes"
    idle = 1.0

    def handle(self):
        self.connection.settimeout(self.idle)
        try:
            while self.read_head():
                self.wfile.write(ANSWER)
                if self.mode == "closes":
                    return
        except OSError:  # TimeoutError among them
            return  # idle for too long, or the client went away: the connection closes

    def read_head(self) -> bool:
        """A request's head read up to its blank line; False where the client closed."""
        line = self.rfile.readline()
        while line not in (b"\r\n", b"\n", b""):
            line = self.rfile.readline()
        return line != b""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--mode", choices=("closes", "keeps-open"), default="closes")
    parser.add_argument("--idle", type=float, default=1.0)
    args = parser.parse_args()
    Handler.mode, Handler.idle = args.mode, args.idle
    serve(args.port, Handler)


if __name__ == "__main__":
    main()
