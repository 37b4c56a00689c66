"""Cheap reads of /proc for a known set of processes, through files kept open
(``pread`` at offset 0 returns fresh figures without reopening)."""

from __future__ import annotations

import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


class ProcFiles:
    def __init__(self):
        self._stat: dict[int, int] = {}

    def _fd(self, pid: int) -> int | None:
        fd = self._stat.get(pid)
        if fd is None:
            try:
                fd = self._stat[pid] = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
            except OSError:
                return None
        return fd

    def stat(self, pid: int) -> tuple[float, int, int] | None:
        """(CPU seconds, threads, RSS bytes) of a live process; None once it has gone."""
        fd = self._fd(pid)
        if fd is None:
            return None
        try:
            data = os.pread(fd, 2048, 0)
        except OSError:
            self.forget(pid)
            return None
        if not data:
            self.forget(pid)
            return None
        # Fields after the command name (which may hold spaces) in its parentheses.
        fields = data[data.rindex(b")") + 2 :].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        return cpu, int(fields[17]), int(fields[21]) * PAGE

    def forget(self, pid: int) -> None:
        fd = self._stat.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for pid in list(self._stat):
            self.forget(pid)


def pss_uss(pid: int) -> tuple[int, int] | None:
    """PSS and USS (private pages) in bytes from smaps_rollup; None if unreadable."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"Pss", b"Private_Clean", b"Private_Dirty"):
            values[key] = int(rest.split()[0]) * 1024
    if b"Pss" not in values:
        return None
    return values[b"Pss"], values.get(b"Private_Clean", 0) + values.get(b"Private_Dirty", 0)


def cpus_busy_seconds(cpus) -> float | None:
    """CPU seconds the given CPUs spent running tasks (user, nice, system; not idle,
    iowait or interrupts) since boot, from /proc/stat; None where it cannot be read."""
    wanted = {f"cpu{cpu}" for cpu in cpus}
    ticks = 0
    try:
        with open("/proc/stat") as handle:
            for line in handle:
                fields = line.split()
                if fields and fields[0] in wanted:
                    ticks += int(fields[1]) + int(fields[2]) + int(fields[3])
                    wanted.discard(fields[0])
    except (OSError, ValueError, IndexError):
        return None
    return None if wanted else ticks / CLOCK_TICKS
