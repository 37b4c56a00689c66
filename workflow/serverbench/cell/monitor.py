"""Samples a server's CPU, memory and worker count while it is under load.

RSS summed over preforked workers counts shared pages once per worker, so PSS
and USS are read too, from smaps_rollup and at most once a PSS_PERIOD_S. The
sampler is cheap by design (serverbench.host.procfs: one /proc read per process,
files kept open; the process set from the server's cgroup, its tree walked
only now and then), samples less often while nothing changes, and measures
its own CPU time so its cost is in every result.
"""

from __future__ import annotations

import statistics
import threading
import time

from serverbench.host.procfs import ProcFiles, cpus_busy_seconds, pss_uss

PSS_PERIOD_S = 1.0  # smaps_rollup walks every mapping: read it about once a second
TREE_EVERY = 10  # without a cgroup, walk the process tree on every Nth sample only
MAX_INTERVAL_S = 1.0  # while nothing changes the interval doubles up to this


class Monitor:
    """Background sampler of a ServerProcess's tree (and its cgroup)."""

    def __init__(self, server, interval: float = 0.1):
        self.server = server
        self.interval = interval
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="serverbench-monitor", daemon=True)
        self._own_cpu = 0.0
        self._cpu_by_pid: dict[int, float] = {}
        self._phase = "load"
        self.marks: dict[str, float] = {"load": 0.0}
        self._proc = ProcFiles()
        self._pids: list[int] = []
        self._count = 0
        self._last_pss = float("-inf")
        self._busy0 = self._busy1 = None

    def __enter__(self) -> Monitor:
        self._t0, self._cpu0, self._cgroup_cpu0, self._busy0 = self._reading()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if "idle" not in self.marks:
            self._end_of_load()
        else:
            # The watch's end read once more: backed off to a sample a second, the series could
            # otherwise end up to a second before the idle watch did (make test of 99b21b1: 4.998 s
            # observed of 6 watched).
            self._refresh_pids(force=True)
            self.samples.append(self._sample())
        self._proc.close()

    def _end_of_load(self) -> None:
        """CPU figures of the summary cover the load only, not the idle tail."""
        self._t1, self._cpu1, self._cgroup_cpu1, self._busy1 = self._reading()

    def _reading(self) -> tuple:
        """Now, the tree's CPU seconds, its cgroup's, and the busy seconds of the server's CPUs."""
        now = time.monotonic()
        self._refresh_pids(force=True)
        isolation = self.server.isolation
        return now, self._tree_cpu(), isolation.cpu_seconds(), cpus_busy_seconds(isolation.cpus)

    def mark(self, phase: str) -> None:
        """Samples from now on belong to ``phase`` (``idle`` after the load)."""
        if phase == "idle":
            self._end_of_load()
        self._phase = phase
        self.marks[phase] = round(time.monotonic() - self._t0, 4)

    def _refresh_pids(self, force: bool = False) -> None:
        """The server's processes: its cgroup's list (one read), else its tree now and then."""
        in_cgroup = self.server.isolation.pids()
        if in_cgroup:
            self._pids = sorted(in_cgroup)
        elif force or self._count % TREE_EVERY == 0:
            self._pids = [process.pid for process in self.server.tree()]

    def _tree_cpu(self) -> float:
        """CPU seconds of the tree, keeping the last figure of processes that exited."""
        for pid in self._pids:
            stat = self._proc.stat(pid)
            if stat is not None:
                self._cpu_by_pid[pid] = stat[0]
        return sum(self._cpu_by_pid.values())

    def _run(self) -> None:
        interval = self.interval
        while not self._stop.is_set():
            started = time.thread_time()
            self._refresh_pids()
            sample = self._sample()
            self._own_cpu += time.thread_time() - started
            # Back off while the process set and memory stay as they were; catch up on any change.
            same = self.samples and all(sample[k] == self.samples[-1][k] for k in ("processes", "threads", "rss"))
            interval = min(MAX_INTERVAL_S, interval * 2) if same else self.interval
            self.samples.append(sample)
            self._count += 1
            self._stop.wait(interval)

    def _sample(self) -> dict:
        now = time.monotonic()
        with_pss = now - self._last_pss >= PSS_PERIOD_S
        rss = pss = uss = threads = processes = 0
        pss_ok = with_pss
        for pid in self._pids:
            stat = self._proc.stat(pid)
            if stat is None:
                continue
            cpu, process_threads, process_rss = stat
            self._cpu_by_pid[pid] = cpu
            processes, threads, rss = processes + 1, threads + process_threads, rss + process_rss
            if with_pss:
                memory = pss_uss(pid)
                pss_ok = pss_ok and memory is not None
                if memory:
                    pss, uss = pss + memory[0], uss + memory[1]
        if with_pss:
            self._last_pss = now
        return {
            "t": round(now - self._t0, 4),
            "phase": self._phase,
            "cpu_s": round(sum(self._cpu_by_pid.values()), 4),
            "rss": rss,
            "pss": pss if pss_ok else None,
            "uss": uss if pss_ok else None,
            "processes": processes,
            "threads": threads,
            "cgroup_memory": self.server.isolation.memory_bytes(),
            "oom_kills": self.server.isolation.oom_kills(),
        }

    def scaling(self) -> dict:
        """How the worker count moved: at the start, its peak, the time to reach
        it under load, and the time to fall back after the load ended.

        Counts are processes of the server tree (a master included), so they
        compare between samples of one server, not across designs.
        """
        load = [s for s in self.samples if s["phase"] == "load"]
        idle = [s for s in self.samples if s["phase"] == "idle"]
        if not load:
            return {}
        start = load[0]["processes"]
        peak = max(s["processes"] for s in load)
        peak_at = next(s["t"] for s in load if s["processes"] == peak)
        out = {
            "processes_start": start,
            "processes_peak": peak,
            "scaled_up": peak > start,
            "time_to_peak_s": round(peak_at - self.marks["load"], 3) if peak > start else None,
            "processes_end_of_load": load[-1]["processes"],
        }
        if idle:
            low = min(s["processes"] for s in idle)
            back = next((s["t"] for s in idle if s["processes"] <= start), None)
            out.update(
                processes_idle_min=low,
                processes_idle_end=idle[-1]["processes"],
                idle_observed_s=round(idle[-1]["t"] - self.marks["idle"], 3),
                time_to_scale_down_s=round(back - self.marks["idle"], 3) if back is not None and peak > start else None,
            )
        return out

    def summary(self) -> dict:
        wall = self._t1 - self._t0
        cpu_s = self._cpu1 - self._cpu0
        if self._cgroup_cpu0 is not None and self._cgroup_cpu1 is not None:
            # The cgroup also counts processes that came and went between samples.
            cpu_s = self._cgroup_cpu1 - self._cgroup_cpu0
        cpus = len(self.server.isolation.cpus)

        def series(key):
            return [s[key] for s in self.samples if s.get(key) is not None]

        rss, pss, uss = series("rss"), series("pss"), series("uss")
        procs = series("processes")
        return {
            "wall_s": round(wall, 4),
            "cpu_s": round(cpu_s, 4),
            "cpu_percent": round(100 * cpu_s / wall, 2) if wall else None,
            "cpu_percent_of_allotment": round(100 * cpu_s / (wall * cpus), 2) if wall else None,
            "rss_peak_bytes": max(rss, default=None),
            "rss_mean_bytes": round(statistics.fmean(rss)) if rss else None,
            "pss_peak_bytes": max(pss, default=None),
            "pss_mean_bytes": round(statistics.fmean(pss)) if pss else None,
            "uss_peak_bytes": max(uss, default=None),
            "cgroup_memory_peak_bytes": self.server.isolation.memory_peak_bytes(),
            "processes_max": max(procs, default=None),
            "processes_min": min(procs, default=None),
            "threads_max": max(series("threads"), default=None),
            "samples": len(self.samples),
            "sample_interval_s": self.interval,
            "sampler_cpu_s": round(self._own_cpu, 4),
            **self._foreign(cpu_s, wall, cpus),
        }

    def _foreign(self, cpu_s: float, wall: float, cpus: int) -> dict:
        """CPU time others took on the server's CPUs during the load: their busy time
        (/proc/stat) less the server's own. The server's CPUs are its alone by design
        (harness and client run elsewhere), so anything here is interference
        (flag ``cpu_contended``)."""
        if self._busy0 is None or self._busy1 is None or not wall:
            return {"cpus_busy_s": None, "foreign_cpu_s": None, "foreign_cpu_share": None}
        busy = self._busy1 - self._busy0
        foreign = max(0.0, busy - cpu_s)
        return {
            "cpus_busy_s": round(busy, 4),
            "foreign_cpu_s": round(foreign, 4),
            "foreign_cpu_share": round(foreign / (wall * cpus), 4),
        }
