"""Where the server listens: loopback (the default) or its own network namespace.

In ``netns`` mode the server runs in a fresh network namespace joined to the
client's by a veth pair, so client and server talk over a real (virtual) link
with two network stacks, as two hosts would: separate TCP state, backlog and
port ranges, no loopback shortcuts. Every command is an argv for ``ip``.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import uuid
from dataclasses import dataclass, field

LOOPBACK = "127.0.0.1"
MODES = ("loopback", "netns")
# A /30 per cell out of this range; the third octet comes from the namespace's id.
NETNS_RANGE = ipaddress.ip_network("10.213.0.0/16")


class NetworkError(RuntimeError):
    """The namespace or its link could not be set up."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")


@dataclass
class Network:
    """The server's side of the network for one cell."""

    mode: str = "loopback"
    namespace: str | None = None
    server_address: str = LOOPBACK
    client_address: str | None = None
    links: list[str] = field(default_factory=list)

    def setup(self) -> Network:
        if self.mode == "loopback":
            return self
        if self.mode != "netns":
            raise NetworkError(f"unknown network mode {self.mode!r}; known: {', '.join(MODES)}")
        tag = uuid.uuid4().hex[:8]
        self.namespace = f"serverbench-{tag}"
        host_link, server_link = f"sbh{tag}", f"sbn{tag}"
        subnets = list(NETNS_RANGE.subnets(new_prefix=30))
        subnet = subnets[(int(tag, 16) ^ os.getpid()) % len(subnets)]
        client, server = list(subnet.hosts())
        self.client_address, self.server_address = str(client), str(server)
        try:
            _ip("netns", "add", self.namespace)
            _ip("link", "add", host_link, "type", "veth", "peer", "name", server_link)
            self.links.append(host_link)
            _ip("link", "set", server_link, "netns", self.namespace)
            _ip("addr", "add", f"{client}/30", "dev", host_link)
            _ip("link", "set", host_link, "up")
            _ip("-n", self.namespace, "addr", "add", f"{server}/30", "dev", server_link)
            _ip("-n", self.namespace, "link", "set", server_link, "up")
            # Backends behind a front (flup, FastCGI) talk over the namespace's own loopback.
            _ip("-n", self.namespace, "link", "set", "lo", "up")
        except (NetworkError, OSError, subprocess.TimeoutExpired):
            self.cleanup()
            raise
        return self

    def wrap(self, argv: list[str]) -> list[str]:
        """The argv that runs a server process inside the namespace."""
        if self.namespace is None:
            return list(argv)
        return ["ip", "netns", "exec", self.namespace, *argv]

    def describe(self) -> dict:
        addresses = {"server_address": self.server_address, "client_address": self.client_address}
        return {"mode": self.mode, "namespace": self.namespace, **addresses, "link": self.link}

    @property
    def link(self) -> str:
        return "veth pair" if self.namespace else "loopback"

    def cleanup(self) -> None:
        """Remove the namespace (its end of the veth pair goes with it) and the host end."""
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=30)
        self.links.clear()
        if self.namespace is not None:
            subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True, timeout=30)
            self.namespace = None
