"""The client's TCP connections to one server, read from the kernel in-process.

What ``ss -ti state established dst HOST:PORT`` prints (each socket's local
address and ``bytes_received``), asked of the kernel directly over netlink
(``NETLINK_SOCK_DIAG``, the interface ``ss`` itself uses): no process is
started per snapshot, so reading the sockets during a run costs a fraction of
what spawning ``ss`` did, on CPUs the load tool may share.

Layouts (linux/inet_diag.h, linux/tcp.h): ``inet_diag_req_v2`` asks for a
dump of one family's TCP sockets in the established state with their
``tcp_info``; each answer is an ``inet_diag_msg`` followed by attributes, of
which ``INET_DIAG_INFO`` holds ``struct tcp_info`` (``tcpi_bytes_received``
at byte 128, since Linux 4.1).
"""

from __future__ import annotations

import ipaddress
import socket
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_INFO = 2
TCP_ESTABLISHED = 1
HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
REQUEST = struct.Struct("=BBBBI48x")  # inet_diag_req_v2 with an empty sockid (a dump)
MESSAGE_SIZE = 72  # inet_diag_msg
ATTRIBUTE = struct.Struct("=HH")  # rtattr: length, type
BYTES_RECEIVED = struct.Struct("=Q")
BYTES_RECEIVED_AT = 128  # offset of tcpi_bytes_received in struct tcp_info


class SockDiagError(OSError):
    """The kernel would not answer (no NETLINK_SOCK_DIAG here)."""


class ClientSockets:
    """Snapshots of the established connections whose remote end is ``host:port``."""

    def __init__(self, host: str, port: int):
        address = ipaddress.ip_address(host)
        self.family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        self.remote, self.port = address.packed, port
        try:
            self.netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
        except OSError as exc:
            raise SockDiagError(f"netlink sock_diag unavailable: {exc}") from None
        self.sequence = 0

    def close(self) -> None:
        self.netlink.close()

    def snapshot(self) -> dict[str, int]:
        """Each connection's local address and the bytes it has received so far."""
        self.sequence += 1
        request = REQUEST.pack(self.family, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0, 1 << TCP_ESTABLISHED)
        flags = NLM_F_REQUEST | NLM_F_DUMP
        self.netlink.send(
            HEADER.pack(HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, flags, self.sequence, 0) + request
        )
        sockets: dict[str, int] = {}
        while True:
            data = self.netlink.recv(1 << 17)
            offset = 0
            while offset + HEADER.size <= len(data):
                length, kind = HEADER.unpack_from(data, offset)[:2]
                if kind == NLMSG_DONE:
                    return sockets
                if kind == NLMSG_ERROR:
                    raise SockDiagError(
                        f"sock_diag dump refused (errno {-struct.unpack_from('=i', data, offset + 16)[0]})"
                    )
                self._read(data, offset + HEADER.size, offset + length, sockets)
                offset += (length + 3) & ~3

    def _read(self, data: bytes, start: int, end: int, sockets: dict[str, int]) -> None:
        local_port, remote_port = struct.unpack_from(">HH", data, start + 4)
        size = len(self.remote)
        if remote_port != self.port or data[start + 24 : start + 24 + size] != self.remote:
            return
        local = ipaddress.ip_address(data[start + 8 : start + 8 + size])
        key = f"[{local}]:{local_port}" if self.family == socket.AF_INET6 else f"{local}:{local_port}"
        sockets[key] = 0
        offset = start + MESSAGE_SIZE
        while offset + ATTRIBUTE.size <= end:
            length, kind = ATTRIBUTE.unpack_from(data, offset)
            if length < ATTRIBUTE.size:
                break
            if kind == INET_DIAG_INFO and length >= ATTRIBUTE.size + BYTES_RECEIVED_AT + BYTES_RECEIVED.size:
                sockets[key] = BYTES_RECEIVED.unpack_from(data, offset + ATTRIBUTE.size + BYTES_RECEIVED_AT)[0]
            offset += (length + 3) & ~3
