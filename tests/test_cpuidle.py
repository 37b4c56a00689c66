"""Idle CPUs held to a wake-up latency while a cell runs (serverbench.host.cpuidle):
the kernel's own idle-state counters show which states the CPUs entered."""

import os
import time

import pytest
from conftest import measure_cell, missing, require
from serverbench.host.cpuidle import DEVICE, IdleLatencyHold, idle_entries

# Times what it tests against a figure measured beside it: make test runs it alone, after the rest.
pytestmark = pytest.mark.serial

IDLE_S = 0.5


def halting_states(entries: dict[str, int]) -> dict[str, int]:
    """Every idle state but the polling one (named POLL by the kernel)."""
    return {name: count for name, count in entries.items() if name != "POLL"}


@pytest.fixture
def halting_host():
    entries = idle_entries()
    if not halting_states(entries):
        # A machine kind, not an install's gap: a VM or kernel without cpuidle states (the
        # project's machine is one) has no halting state a hold could keep its CPUs out of.
        pytest.skip(
            "for a machine kind whose CPUs have an idle state that halts them; this one has "
            f"{sorted(entries) or 'none'} (/sys/devices/system/cpu/cpu*/cpuidle)"
        )
    if not os.access(DEVICE, os.W_OK):
        missing(f"{DEVICE} is not writable here (root is needed)")


def entered_while_idle(hold: IdleLatencyHold) -> dict[str, int]:
    with hold:
        time.sleep(IDLE_S)
    return hold.describe()["entered"]


def test_without_a_hold_idle_cpus_halt(halting_host):
    entered = entered_while_idle(IdleLatencyHold(None))
    assert sum(halting_states(entered).values()) > 0, entered


def test_a_zero_hold_keeps_idle_cpus_polling_and_ends_with_the_block(halting_host):
    hold = IdleLatencyHold(0)
    entered = entered_while_idle(hold)
    assert hold.describe()["held"] and hold.fd is None
    assert sum(halting_states(entered).values()) == 0, entered
    assert entered.get("POLL", 0) > 0, entered
    # The request went with the file: the host's own policy is back.
    assert sum(halting_states(entered_while_idle(IdleLatencyHold(None))).values()) > 0


def test_a_hold_that_cannot_be_taken_is_recorded(tmp_path):
    hold = IdleLatencyHold(0, device=tmp_path / "no-such-device")
    with hold:
        pass
    described = hold.describe()
    assert described["held"] is False and "no-such-device" in described["reason"]


def test_every_cell_records_its_hold(halting_host, base_config, tmp_path):
    require("starman", "wrk")
    record = measure_cell(base_config, tmp_path, "starman", concurrency=2)
    assert record["status"] == "ok", record["reason"]
    idle = record["cpu_idle"]
    assert idle["requested_us"] == 0 and idle["held"] and idle["driver"]
    assert sum(halting_states(idle["entered"]).values()) == 0, idle
