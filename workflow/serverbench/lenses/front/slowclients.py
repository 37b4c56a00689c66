"""Clients that are not fast, what each does on the wire, and how each connection ended.

    python -m serverbench.lenses.front.slowclients --kind "slow senders" --count 2 --host H --port P \
        --path / --hold 2.5 --pace 0.5

opens ``count`` connections at once and keeps them for ``hold`` seconds (``--ready FILE``:
creates FILE once every connection is open and has sent its first bytes):

- **slow senders** send the request line and headers one byte every ``pace`` seconds (a
  request of 240 bytes takes two minutes at 0.5 s): a server that reads the request in the
  worker holds that worker for as long as the client dawdles;
- **slow body** sends the headers of a POST at once and its body of ``body_bytes`` 16 bytes
  every ``pace`` seconds (to /echo, which reads the whole body);
- **slow readers** send a whole GET for an answer larger than every socket buffer on the
  way (/large, 8 MiB) with a receive buffer of 4 KiB, then read 1 KiB every ``pace``
  seconds: a server that writes the answer from the worker holds it until the client has
  read all but what the buffers absorb.

At the end it prints one JSON object: each connection's outcome (``held`` to the end, when
the client let go; ``answered`` with its status; ``closed`` by the server or the front,
the timeout that defeated the slow client; ``refused``), the seconds each was held and the
client's own CPU time against its wall time (a slow client must not be a busy one).
Connections are opened by the harness's client CPUs (the caller pins this process).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import socket
import statistics
import sys
import time
from dataclasses import asdict, dataclass

from serverbench.lenses.front.record import SlowOutcome

HEADER_PADDING = 160  # bytes of an X-Padding header: a request as long as a browser's
BODY_CHUNK = 16
READ_CHUNK = 1024
RECEIVE_BUFFER = 4096


@dataclass
class Ending:
    outcome: SlowOutcome
    held_s: float
    status: int | None = None
    sent_bytes: int = 0
    read_bytes: int = 0


def request_head(kind: str, host: str, path: str, body_bytes: int) -> bytes:
    method = "POST" if kind == "slow body" else "GET"
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "User-Agent: serverbench-slow-client"]
    if kind == "slow body":
        lines += [f"Content-Length: {body_bytes}", "Content-Type: application/octet-stream"]
    lines.append("X-Padding: " + "p" * HEADER_PADDING)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_of(data: bytes) -> int | None:
    """The status code of an answer's first line, once it has arrived."""
    line = data.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) >= 2 and line[1].isdigit() else None


class SlowClient:
    def __init__(self, kind: str, host: str, port: int, path: str, pace: float, body_bytes: int, started=None):
        self.kind, self.host, self.port, self.path = kind, host, port, path
        self.pace, self.body_bytes = pace, body_bytes
        self.sent = self.read = 0
        self.answer = b""
        # Set once connected and its first bytes sent (or refused): what the caller waits for.
        self.started = started or asyncio.Event()

    async def run(self, until: float) -> Ending:
        started = time.monotonic()
        try:
            reader, writer = await self._connect()
        except OSError:
            self.started.set()
            return Ending(SlowOutcome.REFUSED, 0.0)
        try:
            outcome = await asyncio.wait_for(self._talk(reader, writer), max(0.0, until - time.monotonic()))
        except TimeoutError:
            outcome = SlowOutcome.HELD
        except (ConnectionError, OSError):
            outcome = SlowOutcome.CLOSED
        finally:
            writer.close()
            self.started.set()
        held = round(time.monotonic() - started, 3)
        return Ending(outcome, held, status_of(self.answer), self.sent, self.read)

    async def _connect(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.kind == "slow readers":  # before connect, so the window offered is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (self.host, self.port))
        return await asyncio.open_connection(sock=sock, limit=READ_CHUNK * 4)

    async def _send(self, writer, data: bytes) -> None:
        writer.write(data)
        await writer.drain()
        self.sent += len(data)
        self.started.set()

    async def _talk(self, reader, writer) -> SlowOutcome:
        head = request_head(self.kind, self.host, self.path, self.body_bytes)
        if self.kind == "slow senders":
            for index in range(len(head)):
                await self._send(writer, head[index : index + 1])
                await asyncio.sleep(self.pace)
        elif self.kind == "slow body":
            await self._send(writer, head)
            for start in range(0, self.body_bytes, BODY_CHUNK):
                await self._send(writer, b"b" * min(BODY_CHUNK, self.body_bytes - start))
                await asyncio.sleep(self.pace)
        else:
            await self._send(writer, head)
            while True:
                chunk = await reader.read(READ_CHUNK)
                if not chunk:
                    return SlowOutcome.CLOSED if status_of(self.answer) is None else SlowOutcome.ANSWERED
                self._got(chunk)
                await asyncio.sleep(self.pace)
        while True:  # the whole request sent before the end: its answer
            chunk = await reader.read(65536)
            if not chunk:
                return SlowOutcome.ANSWERED if status_of(self.answer) is not None else SlowOutcome.CLOSED
            self._got(chunk)
            if status_of(self.answer) is not None:
                return SlowOutcome.ANSWERED

    def _got(self, chunk: bytes) -> None:
        self.read += len(chunk)
        if len(self.answer) < 256:
            self.answer += chunk[:256]


async def run_all(args) -> list[Ending]:
    until = time.monotonic() + args.hold
    clients = [
        SlowClient(args.kind, args.host, args.port, args.path, args.pace, args.body_bytes) for _ in range(args.count)
    ]
    running = [asyncio.ensure_future(client.run(until)) for client in clients]
    if args.ready:
        await announce_ready(args.ready, clients, until)
    return list(await asyncio.gather(*running))


async def announce_ready(path: str, clients: list[SlowClient], until: float) -> None:
    """Create ``path`` once every connection is open and has sent its first bytes (or was refused,
    or ended), at the latest when the hold ends: the caller starts its normal clients only then,
    so the slow ones are in place however long this process took to start."""
    with contextlib.suppress(TimeoutError):
        waits = asyncio.gather(*(client.started.wait() for client in clients))
        await asyncio.wait_for(waits, max(0.0, until - time.monotonic()))
    with open(path, "w") as ready:
        ready.write(f"{time.monotonic():.6f}\n")


def summary(args, endings: list[Ending], wall_s: float) -> dict:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = usage.ru_utime + usage.ru_stime
    outcomes: dict[str, int] = {}
    for ending in endings:
        outcomes[ending.outcome] = outcomes.get(ending.outcome, 0) + 1
    closed = [e.held_s for e in endings if e.outcome == SlowOutcome.CLOSED]
    return {
        "kind": args.kind,
        "count": args.count,
        "hold_s": args.hold,
        "pace_s": args.pace,
        "outcomes": outcomes,
        "held_s_median": statistics.median(e.held_s for e in endings) if endings else None,
        "first_closed_s": min(closed) if closed else None,
        "cpu_s": round(cpu_s, 4),
        "wall_s": round(wall_s, 3),
        "busy_share": round(cpu_s / wall_s, 4) if wall_s > 0 else None,
        "connections": [asdict(e) for e in endings],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", required=True, choices=["slow senders", "slow body", "slow readers"])
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/")
    parser.add_argument("--hold", type=float, required=True, help="seconds every connection is kept at most")
    parser.add_argument("--pace", type=float, default=0.5)
    parser.add_argument("--body-bytes", type=int, default=65536)
    parser.add_argument("--ready", help="a file created once every connection is open and sending")
    args = parser.parse_args(argv)
    started = time.monotonic()
    endings = asyncio.run(run_all(args))
    json.dump(summary(args, endings, time.monotonic() - started), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
