"""Two small HTTP/1.1 servers for the request-framing checks' tests, serving the
apps' paths (/ "Hello World!", /big 100 KiB, POST /echo the body back):

    strict   reads requests by RFC 9112 and RFC 9110: anything malformed or ambiguous
             is answered 400 (an unknown transfer coding 501) and the connection closed
    lax      reads whatever it is sent as leniently as it can (bare LF line ends, names
             stripped, the first number of a Content-Length, "chunked" anywhere in
             Transfer-Encoding, chunk sizes modulo 2^64), answers 200, keeps the connection

    python framing_server.py PORT --mode strict|lax
"""

import argparse
import re
import socketserver

from http_server import serve  # beside this file: its directory is on the path when run

HELLO = b"Hello World!"
BIG = b"0123456789abcdef" * 6400
TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
HOST = re.compile(rb"^[A-Za-z0-9.\-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$")


class Refused(Exception):
    def __init__(self, status: int):
        self.status = status


class Closed(Exception):
    pass


class Handler(socketserver.BaseRequestHandler):
    mode = "strict"

    def setup(self):
        self.buffer = b""
        self.keep_alive = False

    def more(self):
        chunk = self.request.recv(65536)
        if not chunk:
            raise Closed
        self.buffer += chunk

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            self.more()
        taken, _, self.buffer = self.buffer.partition(marker)
        return taken

    def exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self.more()
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    def handle(self):
        try:
            while True:
                try:
                    method, path, version, body = self.strict() if self.mode == "strict" else self.lax()
                except Refused as refused:
                    self.send(refused.status, b"refused\n", close=True)
                    return
                # HTTP/1.0 closes unless kept alive, which only the lax one grants.
                close = version == "HTTP/1.0" and not (self.mode == "lax" and self.keep_alive)
                self.send(200, {"/big": BIG, "/echo": body}.get(path, HELLO), method, close=close)
                if close:
                    return
        except (Closed, OSError):
            return

    # strict: RFC 9112 to the letter
    def strict(self):
        head = self.until(b"\r\n\r\n")
        if b"\r" in head.replace(b"\r\n", b"") or b"\n" in head.replace(b"\r\n", b"") or b"\0" in head:
            raise Refused(400)  # a bare CR or LF, or a NUL
        line, *fields = head.split(b"\r\n")
        parts = line.split(b" ")
        if len(parts) != 3 or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
            raise Refused(400)
        headers: dict[bytes, list[bytes]] = {}
        for field_line in fields:
            name, colon, value = field_line.partition(b":")
            if not colon or not TOKEN.match(name) or field_line[:1] in (b" ", b"\t"):
                raise Refused(400)  # no colon, a name that is no token (or with whitespace), an obs-fold
            headers.setdefault(name.lower(), []).append(value.strip(b" \t"))
        hosts = headers.get(b"host", [])
        if len(hosts) != 1 or not HOST.match(hosts[0]):
            raise Refused(400)
        return parts[0].decode(), parts[1].decode(), parts[2].decode(), self.strict_body(parts[2], headers)

    def strict_body(self, version: bytes, headers) -> bytes:
        lengths, codings = headers.get(b"content-length", []), headers.get(b"transfer-encoding", [])
        if codings:
            if lengths or version == b"HTTP/1.0":
                raise Refused(400)
            if [c.strip().lower() for c in b",".join(codings).split(b",")] != [b"chunked"]:
                raise Refused(501 if b"chunked" not in b",".join(codings).lower() else 400)
            return self.strict_chunked()
        if not lengths:
            return b""
        if len(lengths) != 1 or not lengths[0].isdigit():
            raise Refused(400)
        return self.exactly(int(lengths[0]))

    def strict_chunked(self) -> bytes:
        body = b""
        while True:
            size = self.until(b"\r\n").split(b";")[0]
            if not re.fullmatch(rb"[0-9A-Fa-f]{1,16}", size):
                raise Refused(400)
            data = self.exactly(int(size, 16))
            if self.exactly(2) != b"\r\n":
                raise Refused(400)
            if not data:
                return body
            body += data

    # lax: whatever it can make of it
    def lax(self):
        while not re.search(rb"\r?\n\r?\n", self.buffer):
            self.more()
        end = re.search(rb"\r?\n\r?\n", self.buffer)
        head, self.buffer = self.buffer[: end.start()], self.buffer[end.end() :]
        line, *fields = re.split(rb"\r?\n", head)
        parts = line.split()
        if len(parts) < 3:
            parts = [b"GET", b"/", b"HTTP/1.1"]
        headers = {}
        for field_line in fields:
            name, _, value = field_line.partition(b":")
            headers.setdefault(name.strip().lower(), value.strip())
        self.keep_alive = headers.get(b"connection", b"").lower() == b"keep-alive"
        coding = headers.get(b"transfer-encoding", b"").lower()
        if b"chunked" in coding:
            body = self.lax_chunked()
        else:
            digits = re.search(rb"\d+", headers.get(b"content-length", b"0"))
            body = self.exactly(int(digits.group()) if digits else 0)
        return parts[0].decode(), parts[1].decode(), parts[2].decode(), body

    def lax_chunked(self) -> bytes:
        body = b""
        while True:
            size = int(self.until(b"\n").strip().split(b";")[0] or b"0", 16) % 2**64
            data = self.exactly(size)
            self.until(b"\n")
            if not size:
                return body
            body += data

    def send(self, status, content, method="GET", close=False):
        reason = {200: "OK", 400: "Bad Request", 501: "Not Implemented"}[status]
        head = [f"HTTP/1.1 {status} {reason}", "Content-Type: text/plain", f"Content-Length: {len(content)}"]
        if close:
            head.append("Connection: close")
        self.request.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + (content if method != "HEAD" else b""))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--mode", choices=["strict", "lax"], required=True)
    args = parser.parse_args()
    Handler.mode = args.mode
    serve(args.port, Handler)


if __name__ == "__main__":
    main()
