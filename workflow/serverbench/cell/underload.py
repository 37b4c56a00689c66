"""A server under a closed loop of load, and reloaded as its catalogue declares: what the
operations lens, advise (the best setting reloaded) and the objective's memory reading share.
Each reload's window is read by ``cell.reloads``."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil

from serverbench.cell import reloads, servers
from serverbench.cell.launch import Launch
from serverbench.cell.wire import request
from serverbench.host.procfs import pss_uss
from serverbench.plan import apps

NOT_DECLARED = "the catalogue declares no graceful reload for this server"
LOADED_AT = 0.75  # of the control window: when memory under load is read
ALIVE_WITHIN_S = 1.0  # after the last reload: a correct answer this late says the server came back


def workload_request(launch: Launch) -> tuple[bytes, int]:
    """The workload's request (a GET of its path) and the status a correct answer has."""
    workload = apps.workloads(launch.config, launch.target.profile)[launch.target.workload]
    host = f"{launch.host}:{launch.port}"
    return request("GET", workload["path"], headers=[("Host", host)]), launch.expected_answer["status"]


def memory(launch: Launch) -> tuple[list[dict], int | None, int | None]:
    """PSS and USS of every live process of the server (and their totals, None where one
    could not be read)."""
    found = []
    for process in launch.server.tree():
        read = pss_uss(process.pid)
        try:
            name = process.name()
        except psutil.NoSuchProcess:  # gone between the listing and here
            continue
        found.append(
            {
                "pid": process.pid,
                "name": name,
                "pss_bytes": read[0] if read else None,
                "uss_bytes": read[1] if read else None,
            }
        )
    complete = found and all(p["pss_bytes"] is not None for p in found)
    pss = sum(p["pss_bytes"] for p in found) if complete else None
    uss = sum(p["uss_bytes"] for p in found) if complete else None
    return found, pss, uss


def trigger(launch: Launch, spec: dict) -> None:
    """One reload, as the catalogue declares it: a signal to the server's main process, a file
    it watches touched (uWSGI's chain reload), or a request to its control API (NGINX Unit's
    restart of its application processes)."""
    if "signal" in spec:
        launch.server.front.proc.send_signal(getattr(signal, f"SIG{spec['signal']}"))
        return
    if "touch" in spec:
        watched = Path(servers.render_argv([spec["touch"]], launch.values)[0])
        watched.touch()
        os.utime(watched)  # an existing file: its time set to now, which the server compares
        return
    control = launch.spec.control
    socket_path = servers.render_argv([control["socket"]], launch.values)[0]
    status, answer = servers.control_request(socket_path, spec["control"]["method"], spec["control"]["path"])
    if status != 200:
        raise servers.ServerError(f"reload refused by the control API ({status}): {answer.strip()[:300]}")


def reload_under_load(launch: Launch, plan: dict) -> dict:
    """Closed-loop load with ``plan['reloads']`` reloads ``plan['reload_every']`` s apart (none
    where the server declares no reload): the window before the first (the control), memory
    under that load, each reload's window, and whether the server was still there and
    answering at the end."""
    spec = launch.spec.reload
    sent, status = workload_request(launch)
    # A server without a declared reload still gets the load: its memory under it, and the control.
    every, count = plan["reload_every"], plan["reloads"] if spec else 0
    client = reloads.ClosedLoop(launch.host, launch.port, sent, status, plan["concurrency"]).start()
    origin = time.monotonic()
    moments, problem, loaded = [], None, None
    try:
        # Memory under load: late in the control window, the server warm and busy.
        _sleep_until(origin + every * LOADED_AT)
        processes, pss, uss = memory(launch)
        loaded = {"processes": len(processes), "pss_bytes": pss, "uss_bytes": uss}
        for k in range(count):
            _sleep_until(origin + every * (k + 1))
            moments.append(time.monotonic())
            trigger(launch, spec)
        _sleep_until(origin + every * (count + 1))
    except (OSError, servers.ServerError) as exc:
        problem = f"reload {len(moments)} could not be triggered: {exc}"
    finally:
        outcomes = client.stop()
    end = time.monotonic()
    bounds = [*moments, end]
    found = {
        "status": "ok",
        "reason": problem,
        "connections": plan["concurrency"],
        "loaded_memory": loaded,
        "control": reloads.window(outcomes, origin, moments[0] if moments else end).as_dict(origin),
        "reloads": [reloads.window(outcomes, a, b).as_dict(origin) for a, b in zip(bounds, bounds[1:], strict=False)],
    }
    exit_code = launch.server.exit_code()
    answered_late = any(o.kind == reloads.OK and o.t >= end - ALIVE_WITHIN_S for o in outcomes)
    found["alive_after"] = exit_code is None and answered_late
    if not spec:
        found["status"], found["reason"] = "not declared", NOT_DECLARED
    elif problem or not found["alive_after"]:
        gone = f"the server exited with code {exit_code}" if exit_code is not None else "no correct answer at the end"
        found["status"], found["reason"] = "broken", problem or f"after {len(moments)} reloads {gone}"
    return found


def _sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))


def tree_pss(launch: Launch) -> int | None:
    """The server tree's PSS in bytes (None where a process could not be read)."""
    try:
        return memory(launch)[1]
    except Exception:  # noqa: BLE001 - a process gone mid-read: no figure, never a failed run
        return None
