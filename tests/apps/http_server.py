"""A small HTTP/1.1 server that serves the apps' paths (/, /big, POST /echo)
correctly, or breaks one rule when asked (--breaks RULE), for the
conformance probes' tests:

    no-date            sends no Date header
    wrong-length       says Content-Length one byte more than the body
    ignores-close      keeps the connection open after Connection: close
    pipeline-order     answers a pipelined batch in reverse order
    head-body          sends the body to HEAD
    crash-bad-line     exits on a malformed request line

    python http_server.py PORT [--breaks RULE]
"""

import argparse
import os
import select
import socketserver
import sys
from email.utils import formatdate

HELLO = b"Hello World!"
BIG = b"0123456789abcdef" * 6400
MAX_HEAD = 8192


class Handler(socketserver.StreamRequestHandler):
    breaks = None
    # Unbuffered, so select() on the socket tells whether a pipelined request waits.
    rbufsize = 0

    def handle(self):
        pending = []
        while True:
            request = self.read_request()
            if request is None:
                return
            if request == "bad":
                if self.breaks == "crash-bad-line":
                    os._exit(3)
                self.send(400, b"bad request\n", close=True)
                return
            method, path, version, headers, body = request
            close = version == "HTTP/1.0" and headers.get("connection") != "keep-alive"
            close = close or headers.get("connection") == "close"
            if version == "HTTP/1.1" and "host" not in headers:
                self.send(400, b"no Host\n", close=True)
                return
            content = {"/big": BIG, "/echo": body}.get(path, HELLO)
            if self.breaks == "pipeline-order" and select.select([self.connection], [], [], 0.2)[0] and not close:
                pending.append((method, content))  # answered, reversed, once the batch is read
                continue
            for earlier in reversed(pending):
                self.send(200, earlier[1], method=earlier[0])
            pending = []
            self.send(200, content, method=method, close=close and self.breaks != "ignores-close")
            if close and self.breaks != "ignores-close":
                return

    def read_request(self):
        line = self.rfile.readline(MAX_HEAD)
        if not line:
            return None
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return "bad"
        headers, size = {}, len(line)
        while True:
            field = self.rfile.readline(MAX_HEAD)
            size += len(field)
            if size > MAX_HEAD:
                self.send(431, b"header too large\n", close=True)
                return None
            if field in (b"\r\n", b"\n", b""):
                break
            name, _, value = field.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip().lower() if name.lower() == "connection" else value.strip()
        if "content-length" in headers and "transfer-encoding" in headers:
            return "bad"
        if headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return (*parts, headers, self.read_body(headers))

    def read_body(self, headers):
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                body += self.read_exactly(size)
                self.rfile.readline()
                if size == 0:
                    return body
        return self.read_exactly(int(headers.get("content-length", 0)))

    def read_exactly(self, size):
        data = b""
        while len(data) < size:
            chunk = self.rfile.read(size - len(data))
            if not chunk:
                break
            data += chunk
        return data

    def send(self, status, content, method="GET", close=False):
        reason = {200: "OK", 400: "Bad Request", 431: "Request Header Fields Too Large"}[status]
        length = len(content) + (1 if self.breaks == "wrong-length" else 0)
        head = [f"HTTP/1.1 {status} {reason}", "Content-Type: text/plain", f"Content-Length: {length}"]
        if self.breaks != "no-date":
            head.append(f"Date: {formatdate(usegmt=True)}")
        if close:
            head.append("Connection: close")
        send_body = method != "HEAD" or self.breaks == "head-body"
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + (content if send_body else b""))


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(port: int, handler) -> None:
    """Serves on loopback until killed, once "ready" is on stderr (the tests wait for it)."""
    with Server(("127.0.0.1", port), handler) as server:
        print("ready", flush=True, file=sys.stderr)
        server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--breaks")
    args = parser.parse_args()
    Handler.breaks = args.breaks
    serve(args.port, Handler)


if __name__ == "__main__":
    main()
