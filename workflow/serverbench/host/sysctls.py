"""The host's network state a cell depends on: sysctls, and the TCP ports
earlier cells left in TIME_WAIT."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

TCP_TIME_WAIT = "06"


def sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


def sysctl_int(name: str) -> int | None:
    try:
        return int((sysctl(name) or "").split()[0])
    except (ValueError, IndexError):
        return None


def time_wait_sockets() -> int | None:
    """TCP sockets in TIME_WAIT, from the kernel's counter (cheap at any number)."""
    try:
        with open("/proc/net/sockstat") as handle:
            for line in handle:
                if line.startswith("TCP:"):
                    fields = line.split()
                    return int(fields[fields.index("tw") + 1])
    except (OSError, ValueError):
        pass
    return None


def time_wait_ports() -> int:
    """Local ports held by TCP sockets in TIME_WAIT (IPv4 and IPv6).

    Server-side TIME_WAIT sockets share the server's one port; client-side
    ones each hold an ephemeral port, and it is those that run out.
    """
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                next(handle, None)
                for line in handle:
                    fields = line.split()
                    if fields[3] == TCP_TIME_WAIT:
                        ports.add(fields[1].rsplit(":", 1)[1])
        except OSError:
            continue
    return len(ports)


def drain_time_wait(limit: int, timeout: float = 90.0) -> dict:
    """Wait until the ports held in TIME_WAIT by earlier cells fall to ``limit``.

    A non-keep-alive cell leaves tens of thousands of them; too many and the
    next cell's connects fail for want of ephemeral ports, so each cell
    starts with room to connect.
    """
    started = time.monotonic()
    sockets = time_wait_sockets()
    if sockets is not None and sockets <= limit:
        # Every port in TIME_WAIT is held by at least one such socket: no need to read the tables.
        return {"before": sockets, "after": sockets, "limit": limit, "waited_s": 0.0, "counted": "sockets"}
    before = now = time_wait_ports()
    while now > limit and time.monotonic() - started < timeout:
        time.sleep(0.5)
        now = time_wait_ports()
    waited = round(time.monotonic() - started, 3)
    return {"before": before, "after": now, "limit": limit, "waited_s": waited, "counted": "ports"}


def listen_backlog(port: int, wrap=list, env: dict | None = None) -> int | None:
    """The backlog of the socket listening on ``port`` (``ss -ltn``: Send-Q of a
    listening socket), as the kernel applies it; ``wrap`` runs ss where the
    server's network is (a namespace). None when it cannot be read."""
    argv = wrap(["ss", "-ltnH", f"sport = :{port}"])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    sizes = [int(fields[2]) for fields in map(str.split, done.stdout.splitlines()) if len(fields) >= 4]
    return max(sizes) if sizes else None
