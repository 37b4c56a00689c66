"""The listener's accept-queue depth over time, read from the kernel over netlink sock_diag (as
host.sockdiag reads the client's sockets): for a LISTEN socket ``idiag_rqueue`` is the accept
queue's length and ``idiag_wqueue`` its backlog (linux/inet_diag.h, net/ipv4/tcp_diag.c)."""

from __future__ import annotations

import socket
import struct
import threading
import time

from serverbench.host.sockdiag import (
    HEADER,
    NETLINK_SOCK_DIAG,
    NLM_F_DUMP,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSG_ERROR,
    REQUEST,
    SOCK_DIAG_BY_FAMILY,
    SockDiagError,
)

TCP_LISTEN = 10
QUEUES_AT = 56  # idiag_rqueue, idiag_wqueue: after family..retrans (4), the sockid (48), expires (4)


def listener_queue(port: int, family: int = socket.AF_INET) -> tuple[int, int] | None:
    """(queued, backlog) of the socket listening on ``port`` (the deepest where several share it,
    SO_REUSEPORT), None where none is seen from this network namespace."""
    try:
        netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    except OSError as exc:
        raise SockDiagError(f"netlink sock_diag unavailable: {exc}") from None
    with netlink:
        request = REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN)
        netlink.send(
            HEADER.pack(HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + request
        )
        found = []
        while True:
            data, offset = netlink.recv(1 << 17), 0
            while offset + HEADER.size <= len(data):
                length, kind = HEADER.unpack_from(data, offset)[:2]
                if kind == NLMSG_DONE:
                    return max(found) if found else None
                if kind == NLMSG_ERROR:
                    raise SockDiagError("sock_diag dump of listeners refused")
                start = offset + HEADER.size
                if struct.unpack_from(">H", data, start + 4)[0] == port:
                    found.append(struct.unpack_from("=II", data, start + QUEUES_AT))
                offset += (length + 3) & ~3


class QueueSampler:
    """Samples a listener's accept-queue depth every ``every_s`` in a thread, while in its ``with``:
    ``samples`` as (seconds from the start, queued), queued None where no listener was seen."""

    def __init__(self, port: int, every_s: float = 0.05):
        self.port, self.every_s = port, every_s
        self.samples: list[tuple[float, int | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> QueueSampler:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                queue = listener_queue(self.port)
            except SockDiagError:
                return
            self.samples.append((round(time.monotonic() - self._start, 3), None if queue is None else queue[0]))
            self._stop.wait(self.every_s)
