"""A counted server's process tree (the work lens): which of its processes count, their CPU
times, signals that end them in the order their counts need, and the scheduling class they
run in (SCHED_FIFO for a ``work_realtime`` server, the normal class before anything ends)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from serverbench.cell.launch import Launch


def realtime(priority: int | None) -> list[str]:
    """The prefix that runs a server, and every process it starts, at SCHED_FIFO ``priority``
    (none: the host's normal scheduling)."""
    return ["chrt", "--fifo", str(priority)] if priority else []


def realtime_refused(priority: int | None) -> str | None:
    """Why a server may not run at SCHED_FIFO ``priority`` here (None: it may), asked of
    chrt itself in a process of its own."""
    if not priority:
        return None
    tried = subprocess.run([*realtime(priority), "true"], capture_output=True, text=True)
    if tried.returncode == 0:
        return None
    return (
        f"the work lens runs servers at SCHED_FIFO {priority} (work_lens.realtime_priority), which this "
        f"user may not ({tried.stderr.strip()[-200:]}): run as root, or set realtime_priority: null"
    )


def counted_processes(launch: Launch) -> list[psutil.Process]:
    """The server's processes now, a perf wrapper left out (it counts, it is not counted)."""
    found = []
    for process in launch.server.tree():
        try:
            if process.name() != "perf":
                found.append(process)
        except psutil.NoSuchProcess:
            pass
    return found


def tree_usage(launch: Launch) -> dict:
    """CPU seconds in user space and in the kernel of the server's processes (the wrapper
    excluded), read before the stop: perf's task-clock has the total, not the split."""
    usage = {"cpu_user_s": 0.0, "cpu_system_s": 0.0}
    for process in counted_processes(launch):
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        usage["cpu_user_s"] += times.user + times.children_user
        usage["cpu_system_s"] += times.system + times.children_system
    return usage


def pids(launch: Launch) -> set[int]:
    return {process.pid for process in counted_processes(launch)}


def _signal(processes: list[psutil.Process], signum: int) -> None:
    for process in processes:
        try:
            process.send_signal(signum)
        except psutil.NoSuchProcess:
            pass


def _running(process: psutil.Process) -> bool:
    """Not yet ended: a child of a frozen parent stays a zombie, its counts written."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _children_first(processes: list[psutil.Process], grace: float) -> None:
    """The server's top process(es) frozen (SIGSTOP) while every other one is TERMed and
    ends, then resumed to end too. uWSGI's master SIGKILLs its --http gateway at its own
    stop, before the gateway's counts are written, and would respawn a child ended alone."""
    pids = {process.pid for process in processes}
    tops = []
    for process in processes:
        try:
            if process.ppid() not in pids:
                tops.append(process)
        except psutil.NoSuchProcess:
            pass
    children = [process for process in processes if process not in tops]
    _signal(tops, signal.SIGSTOP)
    try:
        _signal(children, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(_running(process) for process in children) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        _signal(tops, signal.SIGTERM)
        _signal(tops, signal.SIGCONT)


def normal_class(launch: Launch) -> None:
    """Every thread of the server's tree (a perf wrapper too) back in the normal class, before
    any of them ends. A process at SCHED_FIFO that reaps its children can spin in the kernel
    (wait4, release_task, shrink_dcache_parent) on its CPU, waiting for a task of the normal
    class that it keeps off that CPU: Unit's main process did, after a life (docs/work.md)."""
    if launch.server is None:
        return
    for process in launch.server.tree():
        try:
            threads = process.threads()
        except psutil.Error:
            continue
        for thread in threads:
            try:
                os.sched_setscheduler(thread.id, os.SCHED_OTHER, os.sched_param(0))
            except OSError:  # ended meanwhile
                pass


def stop_counted(launch: Launch, grace: float, children_first: bool = False) -> None:
    """TERM the server's processes but not a perf wrapper (which writes its summary once
    its child has gone) and wait for the tree to end; Launch.stop ends what is left.
    ``children_first`` (the catalogue's ``work_stop``): the top process ends last. Every
    thread goes back to the normal class first (``normal_class``)."""
    normal_class(launch)
    processes = counted_processes(launch)
    if children_first:
        _children_first(processes, grace)
    else:
        _signal(processes, signal.SIGTERM)
    deadline = time.monotonic() + grace
    # Every member (a backend and its front): each perf wrapper writes once its server has ended.
    while not launch.server.all_exited() and time.monotonic() < deadline:
        time.sleep(0.05)
