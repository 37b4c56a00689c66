"""A replacement on one host: a second instance of the server started while the first serves,
then the first stopped (stopping.stop_under_load), the clients sending throughout.

- ``reuse_port``: both bound to the clients' port with SO_REUSEPORT, the catalogue's
  ``stop.reuse_port`` fragment added to the server's command (the first's too: the kernel
  shares a port only between sockets that all set it). The second is started just before the
  signal, once the load (and a test's queue behind the first) has run: what the first had
  accepted or queued is its own.
- a second upstream of the front: the server's deployment behind nginx (plan.fronts, started by
  the session as every deployment is), its rendered front.conf given a second upstream, the
  second instance's socket, and the front's ``*_next_upstream`` set (``error timeout``, nginx's
  default: a request the stopped one failed retried on the other; or ``off``). The second is
  started before the load, so the front never routes to a socket not yet there.

The second instance runs the catalogue's own argv (the front's: its ``behind`` command, its
socket in a run directory of its own), in the first's isolation, and is stopped by the lens
once the clients have been joined.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from serverbench import REPO_ROOT
from serverbench.cell import servers
from serverbench.cell.launch import Launch, render, server_env
from serverbench.lenses.shutdown.watch import Watcher
from serverbench.lenses.shutdown.words import Handover
from serverbench.plan.catalogue import server_entry
from serverbench.plan.fronts import fronted_name

FRONT_CONF = "front.conf"
SECOND_DIR = "second"  # the second instance's run directory, under the first's: its own backend.sock
BACKEND_SOCKET = "{rundir}/backend.sock"  # plan.fronts.BACKEND_SOCKET, as the upstream names it
# The front's directive for each protocol it speaks to its upstream (nginx: proxy_pass, ...).
RETRY_DIRECTIVE = {"http": "proxy_next_upstream", "uwsgi": "uwsgi_next_upstream", "fastcgi": "fastcgi_next_upstream"}
RETRIED, NOT_RETRIED = "error timeout", "off"
LISTENING_WITHIN_S = 30.0
STOP_GRACE_S = 10.0
UPSTREAMS = (Handover.UPSTREAM_RETRY, Handover.UPSTREAM_NO_RETRY)


def deployment_of(config: dict, server: str) -> str | None:
    """The server's deployment behind the first front of config ``fronts`` it has one for."""
    catalogue = config["catalogue"]
    for front in config.get("fronts") or {}:
        name = fronted_name(server, front)
        if name in catalogue:
            return name
    return None


def with_second_upstream(conf: str, rundir: Path, protocol: str, retried: bool) -> str:
    """The rendered front.conf with the second instance's socket beside the first's in its
    upstream, and the front's retry of a failed request on the other set one way."""
    first = f"server unix:{BACKEND_SOCKET.format(rundir=rundir)};"
    if conf.count(first) != 1 or conf.count("location / {") != 1:
        raise servers.ServerError(f"{FRONT_CONF} has no single upstream {first!r} and location / to add a second to")
    second = f"server unix:{BACKEND_SOCKET.format(rundir=rundir / SECOND_DIR)};"
    directive = f"{RETRY_DIRECTIVE[protocol]} {RETRIED if retried else NOT_RETRIED};"
    conf = conf.replace(first, f"{first}\n        {second}")
    return conf.replace("location / {", f"location / {{\n            {directive}")


def add_second_upstream(launch: Launch, handover: Handover) -> None:
    """After the session's ``prepare`` (front.conf rendered), before its ``start``."""
    path = launch.rundir / FRONT_CONF
    retried = handover is Handover.UPSTREAM_RETRY
    path.write_text(with_second_upstream(path.read_text(), launch.rundir, launch.spec.fronted.protocol, retried))


def reuse_port_command(launch: Launch, fragment: tuple[str, ...]) -> None:
    """After ``prepare``: the server started with its SO_REUSEPORT fragment (``use_command``)."""
    launch.use_command([*launch.spec.command, *fragment], {})


@dataclass
class Second:
    """The second instance of a replacement, started in the first's isolation."""

    launch: Launch
    handover: Handover
    process: servers.ServerProcess | None = None

    @property
    def before_load(self) -> bool:
        return self.handover in UPSTREAMS

    def _argv(self) -> tuple[list[str], str | None]:
        """Its argv and, behind the front, the socket it listens on."""
        launch = self.launch
        if self.handover is Handover.REUSE_PORT:
            return list(launch.argv), None
        rundir = launch.rundir / SECOND_DIR
        rundir.mkdir(exist_ok=True)
        argv = render(launch.config, launch.spec.backend, {**launch.values, "rundir": str(rundir)})
        return argv, BACKEND_SOCKET.format(rundir=rundir)

    def start(self, watcher: Watcher) -> None:
        """Start it and wait until it listens: on its socket, or beside the first on the port."""
        launch = self.launch
        argv, socket_path = self._argv()
        env = {**launch.program_env, **server_env(launch.spec, launch.values)}
        wrapped = launch.network.wrap(argv)
        self.process = servers.ServerProcess(wrapped, launch.log_path, launch.isolation, REPO_ROOT, env).start()
        if socket_path is not None:
            servers.wait_for_socket(socket_path, [self.process], LISTENING_WITHIN_S)
            return
        # As many listeners again as the first has: a server may bind one a worker (gunicorn 27's
        # --reuse-port), and a connection the kernel hands a listener no worker accepts yet waits.
        first = watcher.last.listeners if watcher.last is not None else 1
        deadline = time.monotonic() + LISTENING_WITHIN_S
        while not watcher.wait_for(lambda snapshot: snapshot.listeners >= 2 * first, 0.2):
            if self.process.exit_code() is not None or time.monotonic() > deadline:
                raise servers.ServerError(f"the second instance never listened beside the first: {argv[0]}")

    def stop(self) -> None:
        if self.process is not None and self.process.proc is not None:
            self.process.stop(STOP_GRACE_S)


def stop_spec_of(config: dict, server: str):
    """The declared stop of a server or, for a deployment behind a front, of its app server."""
    entry = server_entry(config, server)
    return server_entry(config, entry.fronted.server).stop if entry.fronted is not None else entry.stop
