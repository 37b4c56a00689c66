"""A small HTTP/1.1 server that serves the apps' paths (/, /big, POST /echo)
correctly, or breaks one rule when asked (--breaks RULE), for the
conformance probes' tests:

    no-date               sends no Date header
    wrong-length          says Content-Length one byte more than the body
    ignores-close         keeps the connection open after Connection: close
    pipeline-order        answers a pipelined batch in reverse order
    head-body             sends the body to HEAD
    crash-bad-line        exits on a malformed request line
    closes-after-one      closes every connection after its first answer (saying Connection: close)
    silent-close-10       closes an HTTP/1.0 keep-alive connection without saying so
    ignores-chunked       reads a chunked request body as empty
    refuses-chunked       refuses a chunked request body with 411
    expect-no-body        answers Expect: 100-continue at once, without reading the body, and closes
    no-continue           sends no 100 Continue (it reads the body when it comes)
    accepts-big-header    reads a request head of any size
    crash-big-header      exits on a request head larger than it reads
    no-host-ok            answers an HTTP/1.1 request without Host
    answers-both-lengths  takes a body with both Content-Length and chunked as chunked, and stays open
    crash-both-lengths    exits on a request with both Content-Length and chunked
    stuck-on-partial-head serves one connection at a time, and waits for ever for the rest of a
                          head whose client stopped sending and closed

    python http_server.py PORT [--breaks RULE]
"""

import argparse
import os
import select
import socketserver
import sys
import time
from email.utils import formatdate

HELLO = b"Hello World!"
BIG = b"0123456789abcdef" * 6400
MAX_HEAD = 8192
REASONS = {200: "OK", 400: "Bad Request", 411: "Length Required", 431: "Request Header Fields Too Large"}
# Exit status of a server that died of a request it was sent (the tests read it).
CRASHED = 3


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
            if isinstance(request, int):  # a refusal's status
                self.send(request, b"refused\n", close=True)
                return
            method, path, version, headers, body = request
            close = version == "HTTP/1.0" and headers.get("connection") != "keep-alive"
            close = close or headers.get("connection") == "close" or self.breaks == "closes-after-one"
            close = close or (self.breaks == "expect-no-body" and "expect" in headers)  # its body left unread
            if version == "HTTP/1.1" and "host" not in headers and self.breaks != "no-host-ok":
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
            if version == "HTTP/1.0" and self.breaks == "silent-close-10":
                return

    def read_request(self):
        """(method, path, version, headers, body); None when the client is done, or
        the status of a refusal."""
        line = self.rfile.readline(MAX_HEAD)
        if not line:
            return None
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self.crash_if("crash-bad-line")
            return 400
        headers = self.read_headers(len(line))
        if isinstance(headers, int):
            return headers
        if "content-length" in headers and "transfer-encoding" in headers:
            self.crash_if("crash-both-lengths")
            if self.breaks != "answers-both-lengths":
                return 400
        if "chunked" in headers.get("transfer-encoding", "").lower() and self.breaks == "refuses-chunked":
            return 411
        if headers.get("expect", "").lower() == "100-continue":
            if self.breaks == "expect-no-body":
                return (*parts, headers, b"")
            if self.breaks != "no-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return (*parts, headers, self.read_body(headers))

    def read_headers(self, size):
        """The header fields by lowercase name (Connection's value lowercased too), or 431."""
        headers = {}
        while True:
            field = self.rfile.readline(MAX_HEAD)
            size += len(field)
            if size > MAX_HEAD and self.breaks != "accepts-big-header":
                self.crash_if("crash-big-header")
                return 431
            if field and not field.endswith(b"\n") and self.breaks == "stuck-on-partial-head":
                self.wait_for_the_rest()
            if field in (b"\r\n", b"\n", b""):
                return headers
            name, _, value = field.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip().lower() if name.lower() == "connection" else value.strip()

    def wait_for_the_rest(self):
        """The bug stuck-on-partial-head plants: an empty read taken for "not yet", so a
        client that closed mid-head is waited for for ever (asleep, not spinning a CPU)."""
        while True:
            self.rfile.read(1)
            time.sleep(0.1)

    def crash_if(self, rule):
        if self.breaks == rule:
            os._exit(CRASHED)

    def read_body(self, headers):
        if "chunked" in headers.get("transfer-encoding", "").lower() and self.breaks != "ignores-chunked":
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
        length = len(content) + (1 if self.breaks == "wrong-length" else 0)
        head = [f"HTTP/1.1 {status} {REASONS[status]}", "Content-Type: text/plain", f"Content-Length: {length}"]
        if self.breaks != "no-date":
            head.append(f"Date: {formatdate(usegmt=True)}")
        if close:
            head.append("Connection: close")
        send_body = method != "HEAD" or self.breaks == "head-body"
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + (content if send_body else b""))


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class OneAtATimeServer(socketserver.TCPServer):
    allow_reuse_address = True


def serve(port: int, handler, server_class=Server) -> None:
    """Serves on loopback until killed, once "ready" is on stderr (the tests wait for it)."""
    with server_class(("127.0.0.1", port), handler) as server:
        print("ready", flush=True, file=sys.stderr)
        server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--breaks")
    args = parser.parse_args()
    Handler.breaks = args.breaks
    serve(args.port, Handler, OneAtATimeServer if args.breaks == "stuck-on-partial-head" else Server)


if __name__ == "__main__":
    main()
