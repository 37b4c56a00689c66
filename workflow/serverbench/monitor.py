"""Samples a server's CPU, memory and worker count while it is under load.

RSS summed over preforked workers counts shared pages once per worker, so PSS
and USS (from smaps, costlier to read) are sampled too, at a lower rate. The
sampler measures its own CPU time so its cost can be reported.
"""

from __future__ import annotations

import statistics
import threading
import time

import psutil

PSS_EVERY = 10  # read smaps on every Nth sample only: it costs ~1 ms per process


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

    def __enter__(self) -> Monitor:
        self._t0 = time.monotonic()
        self._cpu0 = self._tree_cpu()
        self._cgroup_cpu0 = self.server.isolation.cpu_seconds()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if "idle" not in self.marks:
            self._end_of_load()

    def _end_of_load(self) -> None:
        """CPU figures of the summary cover the load only, not the idle tail."""
        self._t1 = time.monotonic()
        self._cpu1 = self._tree_cpu()
        self._cgroup_cpu1 = self.server.isolation.cpu_seconds()

    def mark(self, phase: str) -> None:
        """Samples from now on belong to ``phase`` (``idle`` after the load)."""
        if phase == "idle":
            self._end_of_load()
        self._phase = phase
        self.marks[phase] = round(time.monotonic() - self._t0, 4)

    def _tree_cpu(self) -> float:
        """CPU seconds of the tree, keeping the last figure of processes that exited."""
        for process in self.server.tree():
            try:
                times = process.cpu_times()
                self._cpu_by_pid[process.pid] = times.user + times.system
            except psutil.NoSuchProcess:
                continue
        return sum(self._cpu_by_pid.values())

    def _run(self) -> None:
        count = 0
        while not self._stop.is_set():
            started = time.thread_time()
            self.samples.append(self._sample(with_pss=count % PSS_EVERY == 0))
            self._own_cpu += time.thread_time() - started
            count += 1
            self._stop.wait(self.interval)

    def _sample(self, with_pss: bool) -> dict:
        rss = pss = uss = threads = 0
        processes = self.server.tree()
        pss_ok = with_pss
        for process in processes:
            try:
                if with_pss:
                    full = process.memory_full_info()
                    rss += full.rss
                    pss += getattr(full, "pss", 0)
                    uss += full.uss
                else:
                    rss += process.memory_info().rss
                threads += process.num_threads()
            except psutil.AccessDenied:
                pss_ok = False
            except psutil.NoSuchProcess:
                continue
        return {
            "t": round(time.monotonic() - self._t0, 4),
            "phase": self._phase,
            "cpu_s": round(self._tree_cpu(), 4),
            "rss": rss,
            "pss": pss if pss_ok else None,
            "uss": uss if pss_ok else None,
            "processes": len(processes),
            "threads": threads,
            "cgroup_memory": self.server.isolation.memory_bytes(),
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
        }
