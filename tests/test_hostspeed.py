"""The machine's steadiness check: a CPU shared with another task is told apart
from a CPU that ran slower, and the page says what was found."""

import contextlib
import os
import subprocess
import sys

import pandas as pd
import pytest
from conftest import missing
from serverbench.host import steadiness as hostspeed
from serverbench.report.machine import hosts_sentence, steadiness_sentence

FAST, SLOW = 0.001, 0.002


def _summary(chunks):
    seconds = sum(cpu for _, cpu in chunks)
    return hostspeed.summarise({"wall_s": seconds, "cpu_s": seconds, "chunks": chunks})


def test_the_summary_counts_slower_chunks_and_chunks_that_waited_apart():
    chunks = [(FAST, FAST)] * 60 + [(SLOW, SLOW)] * 30 + [(SLOW, FAST)] * 10
    figures = hostspeed.summarise({"wall_s": 0.2, "cpu_s": 0.13, "chunks": chunks})
    assert figures["chunks"] == 100
    assert figures["fast_chunk_ms"] == 1.0
    assert figures["slow_share"] == 0.3  # the CPU's own time grew: it ran slower
    assert figures["waited_share"] == 0.35  # the wall time alone grew: something else ran
    assert figures["slowest_over_fast"] == 2.0


def test_the_page_sentence_names_each_cpu_and_warns_only_when_it_matters():
    steady = {"seconds": 3, "cpus": {"0": _summary([(FAST, FAST)] * 100)}, "slow_share_max": 0.0}
    assert steadiness_sentence(steady).endswith("for 0% of the time (up to 1.0×).")
    noisy = _summary([(FAST, FAST)] * 70 + [(SLOW, SLOW)] * 30)
    text = steadiness_sentence({"seconds": 3, "cpus": {"0": steady["cpus"]["0"], "1": noisy}, "slow_share_max": 0.3})
    assert "CPU 1 ran slower than its fastest for 30% of the time (up to 2.0×)" in text
    assert "differ by that much for this reason alone" in text
    assert steadiness_sentence(None) is None


def round_robin(priority: int = 1) -> contextlib.AbstractContextManager:
    """This process, and the check's children it forks meanwhile, under SCHED_RR: of the
    tasks on a CPU only real-time ones of at least that priority run (the kernel's real-time
    throttling leaves the others 5% of each second), so whatever else the machine is running
    the check waits only for what the test puts beside it."""

    @contextlib.contextmanager
    def scheduled():
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(priority))
        except PermissionError as error:
            missing(f"a real-time scheduling class needs root (CAP_SYS_NICE): {error}")
        try:
            yield
        finally:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))

    return scheduled()


def test_a_task_sharing_the_cpu_shows_as_waiting_not_as_a_slower_cpu():
    """A process spinning on CPU 0 for the whole check, both round-robin at one real-time
    priority: the kernel hands CPU 0 to each in turn for 100 ms slices, so the check waits
    for half of its wall time (a slice either way over 1.5 s), and alone, for at most the 5%
    real-time throttling leaves the rest of the machine."""
    with round_robin():
        spinner = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
        try:
            shared = hostspeed.check([0], 1.5)["cpus"]["0"]
        finally:
            spinner.kill()
            spinner.wait()
        alone = hostspeed.check([0], 1.5)["cpus"]["0"]
    assert shared["waited_share"] == pytest.approx(0.5, abs=0.1), shared
    assert alone["waited_share"] < 0.1, alone


@pytest.mark.parametrize("seconds", [0, None])
def test_no_seconds_skips_the_check(seconds):
    assert hostspeed.check([0, 1], seconds) is None


def test_the_page_names_the_hosts_and_their_rounds():
    runs = pd.DataFrame(
        {
            "repeat": [1, 1, 2, 2],
            "host_name": ["n1", "n1", "n2", "n2"],
            "host_cpu_model": ["AMD EPYC"] * 4,
            "host_kernel": ["6.18"] * 4,
            "scheduler_job": [11, 11, 12, 12],
        }
    )
    assert hosts_sentence(runs) == (
        "The cells ran on 2 hosts: n1 (AMD EPYC, kernel 6.18; 2 cells, rounds 1; 1 scheduler job); "
        "n2 (AMD EPYC, kernel 6.18; 2 cells, rounds 2; 1 scheduler job)."
    )
    assert hosts_sentence(runs.drop(columns="host_name")) is None
