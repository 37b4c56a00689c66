"""How deeply the host's idle CPUs may sleep while a cell runs.

A closed loop at low concurrency is a ping-pong between the load tool's CPU
and the server's: every request wakes a CPU that went idle a moment before.
Where idling means halting (a virtual machine's ``haltpoll`` state or HLT:
an exit to the hypervisor), every wake-up costs tens of microseconds, and
whether a run pays it changes from run to run. On the 2-vCPU machine this was
built on, Starman at 2 connections measured either about 7,000 or about 14,000
req/s, repeat by repeat, with neither CPU busy.

A PM QoS request of 0 µs on ``/dev/cpu_dma_latency`` (the kernel interface
that tuned's latency-performance profile uses) keeps idle CPUs in their
polling state for as long as the file stays open; closing it, or the process
ending, restores the host's own policy, so nothing outlives the cell. The
record says what was asked, whether the kernel took it, and which idle states
the CPUs entered meanwhile (the check that it worked).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

DEVICE = Path("/dev/cpu_dma_latency")
CPUS = Path("/sys/devices/system/cpu")


def idle_entries(cpus: Path = CPUS) -> dict[str, int]:
    """How often the CPUs have entered each idle state since boot, by state name."""
    counts: dict[str, int] = {}
    for state in sorted(cpus.glob("cpu[0-9]*/cpuidle/state[0-9]*")):
        try:
            name = (state / "name").read_text().strip()
            counts[name] = counts.get(name, 0) + int((state / "usage").read_text())
        except (OSError, ValueError):
            continue
    return counts


def wake_every_cpu() -> None:
    """Run this thread once on every CPU it may use, then give it its CPUs back.

    The kernel counts an idle state's entry when the CPU leaves it: a CPU that was halted when
    the request was written (the kernel's wake-up IPI is asynchronous) would count that halt
    after the first reading. Once this thread has run on a CPU, that CPU has left its idle state
    and the counter has it, so the first reading is taken after every halt that began before
    the hold."""
    allowed = os.sched_getaffinity(0)
    try:
        for cpu in sorted(allowed):
            os.sched_setaffinity(0, {cpu})
            os.sched_yield()
    finally:
        os.sched_setaffinity(0, allowed)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


class IdleLatencyHold:
    """``with IdleLatencyHold(0):`` holds a wake-up latency request for the block;
    ``None`` leaves the host's idle states alone (and only records them)."""

    def __init__(self, latency_us: int | None, device: Path = DEVICE):
        self.latency_us, self.device = latency_us, device
        self.fd: int | None = None
        self.reason: str | None = None
        self.before: dict[str, int] = {}
        self.after: dict[str, int] = {}

    def __enter__(self) -> IdleLatencyHold:
        if self.latency_us is not None:
            try:
                self.fd = os.open(self.device, os.O_WRONLY | os.O_CLOEXEC)
                os.write(self.fd, struct.pack("i", self.latency_us))
            except OSError as exc:
                self.release()
                self.reason = f"{self.device}: {exc.strerror}"
            else:
                wake_every_cpu()
        self.before = idle_entries()
        return self

    def __exit__(self, *exc) -> None:
        self.after = idle_entries()
        self.release()

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def describe(self) -> dict:
        entered = {name: self.after.get(name, 0) - count for name, count in self.before.items()}
        return {
            "requested_us": self.latency_us,
            "held": self.latency_us is not None and self.reason is None,
            "reason": self.reason,
            "driver": _read(CPUS / "cpuidle" / "current_driver"),
            "governor": _read(CPUS / "cpuidle" / "current_governor_ro") or _read(CPUS / "cpuidle" / "current_governor"),
            "entered": entered,  # idle-state entries on all CPUs during the cell
        }
