"""Isolation of one process tree: CPU pinning, open-file limit, cgroup.

The server enters its cgroup in ``preexec`` — after fork, before exec — because
memory a process already holds is not charged to a group it moves into later.
Where no cgroup can be made, CPU pinning still applies and the result records
that limits were not enforced.
"""

from __future__ import annotations

import os
import resource
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "cpuset", "cpuacct")


def raise_nofile() -> int:
    """Raise the soft open-files limit to the hard limit; return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


SELF_CGROUP = Path("/proc/self/cgroup")
# Where the harness moves itself on cgroup v2 so that its own group may enable
# controllers for the server's (a group with enabled children holds no process).
HARNESS_LEAF = "serverbench-harness"
V2_CONTROLLERS = ("cpuset", "memory", "cpu")
V2_REQUIRED = ("cpuset", "memory")


def _own_cgroup(controller: str | None, self_cgroup: Path = SELF_CGROUP) -> str:
    """This process's cgroup path for a v1 controller (None: the v2 entry)."""
    for line in self_cgroup.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        names = controllers.split(",") if controllers else []
        if (controller is None and not names) or controller in names:
            return path.lstrip("/")
    return ""


def cgroup_version(root: Path = CGROUP_ROOT) -> int | None:
    if (root / "cgroup.controllers").exists():
        return 2
    if all((root / name / "cgroup.procs").exists() for name in V1_CONTROLLERS):
        return 1
    return None


def cpu_list(text: str) -> list[int]:
    """CPU numbers from the kernel's list format (``0-2,5``)."""
    cpus: list[int] = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


def write_checked(path: Path, value: str, same=lambda written, read: written == read) -> None:
    """Write a cgroup limit and read it back: a limit the kernel did not take is an error, not a hope."""
    path.write_text(value)
    read = path.read_text().strip()
    if not same(value, read):
        raise OSError(f"{path} reads {read!r} after writing {value!r}")


def same_cpus(written: str, read: str) -> bool:
    return cpu_list(written) == cpu_list(read)


def same_bytes(written: str, read: str) -> bool:
    # The kernel rounds a memory limit down to whole pages.
    return abs(int(written) - int(read)) < os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class CpuThrottling:
    """A cgroup's CPU quota at work (cpu.stat): the CFS periods it ran in, those in which it used
    its whole quota and waited (throttled), and the time it waited."""

    periods: int
    throttled_periods: int
    throttled_s: float

    def since(self, before: CpuThrottling) -> CpuThrottling:
        return CpuThrottling(
            self.periods - before.periods,
            self.throttled_periods - before.throttled_periods,
            round(self.throttled_s - before.throttled_s, 6),
        )


@dataclass
class Isolation:
    """CPU set, memory limit and open-file limit for one process tree."""

    cpus: list[int]
    memory_limit: int | None = None
    label: str = "serverbench"
    # CPUs' worth of time (cpu.cfs_quota_us / cpu.max), such as 0.8: a variant held
    # to a known share of another's CPU (a regression planted on any machine).
    cpu_quota: float | None = None
    groups: list[Path] = field(default_factory=list)
    method: str = "affinity"
    problem: str | None = None
    nofile: int | None = None
    # The highest OOM-kill count read so far: a container's cgroup goes with the
    # container, so a count read while it ran outlives it (the monitor reads it each sample).
    oom_kills_seen: int | None = None
    root: Path = CGROUP_ROOT
    self_cgroup: Path = SELF_CGROUP

    def setup(self) -> Isolation:
        self.nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        version = cgroup_version(self.root)
        name = f"{self.label}-{uuid.uuid4().hex[:8]}"
        try:
            if version == 1:
                self._setup_v1(name)
                self.method = "cgroup-v1"
            elif version == 2:
                self._setup_v2(name)
                self.method = "cgroup-v2"
            else:
                self.problem = "no writable cgroup hierarchy found"
        except OSError as exc:
            self.problem = f"cgroup setup failed: {exc}"
            self.cleanup()
            self.method = "affinity"
        return self

    def _mkgroup(self, base: Path, name: str) -> Path:
        path = base / name
        path.mkdir()
        self.groups.append(path)
        return path

    def _setup_v1(self, name: str) -> None:
        cpus = ",".join(map(str, self.cpus))
        for controller in V1_CONTROLLERS:
            path = self._mkgroup(self.root / controller / _own_cgroup(controller, self.self_cgroup), name)
            if controller == "cpuset":
                write_checked(path / "cpuset.cpus", cpus, same_cpus)
                write_checked(path / "cpuset.mems", (path.parent / "cpuset.mems").read_text().strip())
            if controller == "memory" and self.memory_limit:
                write_checked(path / "memory.limit_in_bytes", str(self.memory_limit), same_bytes)
                # Swap would hide the limit; where memsw exists, cap it too.
                memsw = path / "memory.memsw.limit_in_bytes"
                if memsw.exists():
                    write_checked(memsw, str(self.memory_limit), same_bytes)
        if self.cpu_quota:
            base = self.root / "cpu" / _own_cgroup("cpu", self.self_cgroup)
            # Where cpu and cpuacct are mounted together, the cpuacct group above is this one.
            path = base / name if (base / name).is_dir() else self._mkgroup(base, name)
            write_checked(path / "cpu.cfs_period_us", str(CFS_PERIOD_US))
            write_checked(path / "cpu.cfs_quota_us", str(cfs_quota_us(self.cpu_quota)))

    def _setup_v2(self, name: str) -> None:
        base = self._v2_base()
        path = self._mkgroup(base, name)
        write_checked(path / "cpuset.cpus", ",".join(map(str, self.cpus)), same_cpus)
        if self.memory_limit:
            write_checked(path / "memory.max", str(self.memory_limit), same_bytes)
            # Swap would hide the limit; where swap is accounted, allow none.
            if (path / "memory.swap.max").exists():
                write_checked(path / "memory.swap.max", "0")
        if self.cpu_quota:
            write_checked(path / "cpu.max", f"{cfs_quota_us(self.cpu_quota)} {CFS_PERIOD_US}")

    def _v2_base(self) -> Path:
        """The group the server's group goes under, its controllers enabled for children.

        cgroup v2 lets a group hand controllers to its children only while it
        holds no process itself, so the harness first moves into a leaf of its
        own (HARNESS_LEAF, reused by later cells).
        """
        own = self.root / _own_cgroup(None, self.self_cgroup)
        base = own.parent if own.name == HARNESS_LEAF else own
        available = (base / "cgroup.controllers").read_text().split()
        missing = [c for c in V2_REQUIRED if c not in available]
        if missing:
            raise OSError(f"controller(s) {', '.join(missing)} not delegated to {base} (cgroup.controllers)")
        enabled = (base / "cgroup.subtree_control").read_text().split()
        wanted = [c for c in V2_CONTROLLERS if c in available and c not in enabled]
        if wanted:
            if own == base:
                leaf = base / HARNESS_LEAF
                leaf.mkdir(exist_ok=True)
                (leaf / "cgroup.procs").write_text(str(os.getpid()))
            (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
            now = [c.lstrip("+") for c in (base / "cgroup.subtree_control").read_text().split()]
            if not set(wanted) <= set(now):
                raise OSError(f"{base}/cgroup.subtree_control reads {now} after enabling {wanted}")
        return base

    @property
    def enforced(self) -> bool:
        return self.method.startswith("cgroup")

    def preexec(self) -> None:
        """Runs in the child between fork and exec: enter groups, pin, raise limits."""
        pid = str(os.getpid())
        for group in self.groups:
            with open(group / "cgroup.procs", "w") as handle:
                handle.write(pid)
        os.sched_setaffinity(0, self.cpus)
        raise_nofile()

    def pids(self) -> set[int]:
        """Every process still in the group (empty without cgroups)."""
        found: set[int] = set()
        for group in self.groups:
            try:
                found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def _read(self, *names: str) -> int | None:
        for group in self.groups:
            for name in names:
                path = group / name
                if path.exists():
                    try:
                        return int(path.read_text().split()[0])
                    except (OSError, ValueError, IndexError):
                        return None
        return None

    def memory_bytes(self) -> int | None:
        return self._read("memory.usage_in_bytes", "memory.current")

    def memory_peak_bytes(self) -> int | None:
        return self._read("memory.max_usage_in_bytes", "memory.peak")

    def oom_kills(self) -> int | None:
        """Processes the kernel killed for the group's memory limit (the most ever read)."""
        now = self._read_oom_kills()
        if now is not None:
            self.oom_kills_seen = max(now, self.oom_kills_seen or 0)
        return self.oom_kills_seen

    def _read_oom_kills(self) -> int | None:
        for group in self.groups:
            for name in ("memory.oom_control", "memory.events"):
                try:
                    lines = (group / name).read_text().splitlines()
                except OSError:  # absent, or the group went with its container
                    continue
                for line in lines:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return None

    def cpu_seconds(self) -> float | None:
        usage_ns = self._read("cpuacct.usage")
        if usage_ns is not None:
            return usage_ns / 1e9
        for group in self.groups:
            stat = group / "cpu.stat"
            if stat.exists():
                for line in stat.read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
        return None

    def cpu_quota_read(self) -> float | None:
        """The CPU quota the kernel holds for the group, read back (CPUs' worth of time per
        period: cpu.max, or cpu.cfs_quota_us over cpu.cfs_period_us); None: no quota or no group."""
        for group in self.groups:
            try:
                if (group / "cpu.max").exists():
                    quota, period = (group / "cpu.max").read_text().split()
                elif (group / "cpu.cfs_quota_us").exists():
                    quota = (group / "cpu.cfs_quota_us").read_text().strip()
                    period = (group / "cpu.cfs_period_us").read_text().strip()
                else:
                    continue
            except (OSError, ValueError):
                return None
            return None if quota in ("max", "-1") else int(quota) / int(period)
        return None

    def throttling(self) -> CpuThrottling | None:
        """The group's CFS periods and throttling so far (cpu.stat of the cpu controller)."""
        for group in self.groups:
            try:
                lines = (group / "cpu.stat").read_text().splitlines()
            except OSError:
                continue
            values = dict(line.split(" ", 1) for line in lines if " " in line)
            if "nr_throttled" not in values:
                continue  # v2's cpu.stat without the cpu controller: usage only
            # v2 counts throttled time in µs (throttled_usec), v1 in ns (throttled_time).
            if "throttled_usec" in values:
                throttled_s = int(values["throttled_usec"]) / 1e6
            else:
                throttled_s = int(values.get("throttled_time", 0)) / 1e9
            return CpuThrottling(int(values["nr_periods"]), int(values["nr_throttled"]), throttled_s)
        return None

    def describe(self) -> dict:
        return {
            "method": self.method,
            "limits_enforced": self.enforced,
            "problem": self.problem,
            "cpus": self.cpus,
            "memory_limit_bytes": self.memory_limit,
            "cpu_quota": self.cpu_quota,
            "nofile": self.nofile,
            "cgroups": [str(g) for g in self.groups],
        }

    def cleanup(self) -> None:
        for group in reversed(self.groups):
            try:
                group.rmdir()
            except OSError:
                pass
        self.groups = []


CFS_PERIOD_US = 100_000


def cfs_quota_us(cpus: float) -> int:
    """A quota of ``cpus`` CPUs' worth of time per CFS period (at least the kernel's 1 ms)."""
    return max(1000, round(cpus * CFS_PERIOD_US))


class CpuQuota:
    """A CPU-time quota for one process tree (cgroup v1 ``cpu.cfs_quota_us``,
    v2 ``cpu.max``): ``cpus`` CPUs' worth of time, such as 0.25. Used to give
    the load tool a known, smaller allotment (a weaker client) on any machine.
    """

    def __init__(self, cpus: float, label: str = "serverbench-client"):
        self.cpus = cpus
        self.group: Path | None = None
        self.label = label

    def __enter__(self) -> CpuQuota:
        quota = cfs_quota_us(self.cpus)
        name = f"{self.label}-{uuid.uuid4().hex[:8]}"
        if cgroup_version() == 2:
            self.group = CGROUP_ROOT / _own_cgroup(None) / name
            self.group.mkdir()
            (self.group / "cpu.max").write_text(f"{quota} {CFS_PERIOD_US}")
        else:
            self.group = CGROUP_ROOT / "cpu" / _own_cgroup("cpu") / name
            self.group.mkdir()
            (self.group / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (self.group / "cpu.cfs_quota_us").write_text(str(quota))
        return self

    def enter(self) -> None:
        """Runs in the child between fork and exec."""
        (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def __exit__(self, *exc) -> None:
        if self.group is not None:
            try:
                self.group.rmdir()
            except OSError:
                pass
            self.group = None


class HarnessPlacement:
    """Runs this process's current thread, and the threads and programs it starts
    (the sampler, the socket reader, ss), on ``cpus``: never on the server's. The
    CPU the harness spent meanwhile is measured (all its threads, not its children)."""

    def __init__(self, cpus: list[int]):
        self.cpus = list(cpus)
        self.cpu_s: float | None = None

    def __enter__(self) -> HarnessPlacement:
        self._before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, self.cpus)
        self._started = resource.getrusage(resource.RUSAGE_SELF)
        return self

    def __exit__(self, *exc) -> None:
        ended = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu_s = (ended.ru_utime + ended.ru_stime) - (self._started.ru_utime + self._started.ru_stime)
        os.sched_setaffinity(0, self._before)

    def describe(self) -> dict:
        return {"cpus": self.cpus, "cpu_s": None if self.cpu_s is None else round(self.cpu_s, 4)}
