"""What the kernel says of a server while it stops, read over netlink (``NETLINK_SOCK_DIAG``,
as ``ss`` reads it; serverbench.host.sockdiag reads the client's side the same way):

- whether its listening socket is still there (``ss -l sport = PORT``), and how many there are
  (two where a second instance bound the same port with SO_REUSEPORT);
- each connection to it, by the client's port, and whether a process owns its socket: a
  connection the kernel has completed but the server has not accepted yet sits in the
  listener's accept queue with no inode (``ss`` prints ``ino:0``).

A ``Watcher`` thread takes a snapshot every ``POLL_S`` and remembers every client port it has
seen accepted, so a request that is reset can be told: cut in flight (its connection had been
accepted) or dropped from the accept queue (never accepted). A connection accepted and reset
within one poll reads as never accepted; the lens's tests create their queues so that none is.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

from serverbench.host.sockdiag import (
    HEADER,
    NLM_F_DUMP,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSG_ERROR,
    REQUEST,
    SOCK_DIAG_BY_FAMILY,
    SockDiagError,
)

TCP_ESTABLISHED, TCP_CLOSE_WAIT, TCP_LISTEN = 1, 8, 10
STATES = (1 << TCP_ESTABLISHED) | (1 << TCP_CLOSE_WAIT) | (1 << TCP_LISTEN)
SOURCE_AT, INODE_AT = 8, 68  # in inet_diag_msg: id.idiag_src, idiag_inode
POLL_S = 0.005


@dataclass(frozen=True)
class Snapshot:
    listening: bool
    accepted: frozenset[int]  # the client ports of connections a process owns
    queued: frozenset[int]  # those completed by the kernel, not accepted yet
    listeners: int = 0  # listening sockets on the port (SO_REUSEPORT: one an instance)


class ServerSockets:
    """Snapshots of the sockets whose local end is ``host:port`` (the server's)."""

    def __init__(self, host: str, port: int):
        self.host, address = host, ipaddress.ip_address(host)
        self.family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        self.local, self.port = address.packed, port
        try:
            self.netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)
        except OSError as exc:
            raise SockDiagError(f"netlink sock_diag unavailable: {exc}") from None
        self.sequence = 0

    def close(self) -> None:
        self.netlink.close()

    def snapshot(self) -> Snapshot:
        self.sequence += 1
        request = REQUEST.pack(self.family, socket.IPPROTO_TCP, 0, 0, STATES)
        self.netlink.send(
            HEADER.pack(HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, self.sequence, 0)
            + request
        )
        listeners, accepted, queued = 0, set(), set()
        while True:
            data = self.netlink.recv(1 << 17)
            offset = 0
            while offset + HEADER.size <= len(data):
                length, kind = HEADER.unpack_from(data, offset)[:2]
                if kind == NLMSG_DONE:
                    return Snapshot(listeners > 0, frozenset(accepted), frozenset(queued), listeners)
                if kind == NLMSG_ERROR:
                    raise SockDiagError("sock_diag dump refused")
                start = offset + HEADER.size
                state = data[start + 1]
                local_port, remote_port = struct.unpack_from(">HH", data, start + 4)
                source = data[start + SOURCE_AT : start + SOURCE_AT + len(self.local)]
                ours = source in (self.local, bytes(len(self.local)))  # its address, or any
                if local_port == self.port and ours:
                    if state == TCP_LISTEN:
                        listeners += 1
                    else:
                        inode = struct.unpack_from("=I", data, start + INODE_AT)[0]
                        (accepted if inode else queued).add(remote_port)
                offset += (length + 3) & ~3


@dataclass
class Watcher:
    """A thread reading ``ServerSockets`` until stopped: when the listener was last seen and
    first seen gone after ``since`` (the signal), and every client port it saw accepted."""

    sockets: ServerSockets
    since: float | None = None
    listener_gone_at: float | None = None
    accepted: set[int] = field(default_factory=set)
    last: Snapshot | None = None
    error: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Watcher:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.sockets.close()

    @property
    def sockets_address(self) -> tuple[str, int]:
        """The server's address, as clients connect to it."""
        return self.sockets.host, self.sockets.port

    def was_accepted(self, client_port: int) -> bool:
        with self._lock:
            return client_port in self.accepted

    def wait_for(self, condition, timeout: float) -> bool:
        """Until ``condition(snapshot)`` holds (True) or ``timeout`` s have passed (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                last = self.last
            if last is not None and condition(last):
                return True
            time.sleep(POLL_S)
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                found = self.sockets.snapshot()
            except OSError as exc:  # SockDiagError among them: the times stay unread, and say why
                self.error = str(exc)
                return
            now = time.monotonic()
            with self._lock:
                self.last = found
                self.accepted |= found.accepted
                if self.since is not None and now >= self.since and not found.listening:
                    self.listener_gone_at = self.listener_gone_at or now
            time.sleep(POLL_S)
