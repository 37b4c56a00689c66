"""The hello app that writes down, on every 50th request of a worker, how it is scheduled:
its policy (0 SCHED_OTHER, 1 SCHED_FIFO), its CPUs, and the CPUs of the load client
(h2load or ab) that sent the request, a JSON line each in the file SERVERBENCH_SCHEDULING_LOG
names; and, as the worker ends, ["exit", its policy] (tests/test_work.py: the work lens
runs a server at SCHED_FIFO, its client on its CPU, and ends it in the normal class)."""

import atexit
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "python"))
from hello import application as hello  # noqa: E402

LOG = os.environ["SERVERBENCH_SCHEDULING_LOG"]
CLIENTS = ("h2load", "ab")
TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
ESTABLISHED = "01"
_served = 0


def _tcp() -> list[list[str]]:
    return [line.split() for table in TABLES for line in Path(table).read_text().splitlines()[1:]]


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1], 16)


def _links(fds: Path) -> set[str]:
    """What a process's descriptors point to (one closed meanwhile left out: the listing's own)."""
    found = set()
    for fd in fds.iterdir():
        try:
            found.add(os.readlink(fd))
        except OSError:
            continue
    return found


def _client_cpus() -> list[int]:
    """The CPUs of the client process(es) at the other end of this process's open
    connections (two lives of the lens, each with a client, may run side by side)."""
    own = _links(Path("/proc/self/fd"))
    rows = _tcp()
    peers = {_port(row[2]) for row in rows if f"socket:[{row[9]}]" in own and row[3] == ESTABLISHED}
    theirs = {f"socket:[{row[9]}]" for row in rows if _port(row[1]) in peers}
    cpus = set()
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or (proc / "comm").read_text().strip() not in CLIENTS:
                continue
            if _links(proc / "fd") & theirs:
                cpus |= os.sched_getaffinity(int(proc.name))
        except OSError:  # gone meanwhile
            continue
    return sorted(cpus)


def _write(line: list) -> None:
    with open(LOG, "a") as log:
        log.write(json.dumps(line) + "\n")


@atexit.register
def _at_exit() -> None:
    """How the worker is scheduled as it ends (the lens puts it back in the normal class first)."""
    _write(["exit", os.sched_getscheduler(0)])


def application(environ, start_response):
    global _served
    _served += 1
    if _served % 50 == 0:
        _write([os.sched_getscheduler(0), sorted(os.sched_getaffinity(0)), _client_cpus()])
    return hello(environ, start_response)
