"""work.csv and work_detail.csv: the work lens's records as tables.

work.csv has a row per (profile, workload, server): its status and reason,
the figures per request and what counted them (versions, CPU model), so two
runs' work is compared only where the tools match. work_detail.csv is long: a
row per (profile, workload, server, kind, name) with its figure per request,
kind one of ``class`` (where the instructions ran: interpreter, server, libc,
...), ``object`` (the library or program itself), ``process`` (the kind of
process, by command line) and ``syscall`` (by name).
"""

from __future__ import annotations

import pandas as pd

from serverbench import files

WORK_COLUMNS = [
    "profile",
    "workload",
    "server",
    "language",
    "schema",
    "status",
    "reason",
    "instructions_per_request",
    "collector_instructions_per_request",
    "collector_named",
    "instruction_pairs",
    "syscalls_per_request",
    "context_switches_per_request",
    "cpu_us_per_request",
    "cpu_user_us_per_request",
    "cpu_system_us_per_request",
    "planted_iterations",
    "workers",
    "requests_few",
    "requests_many",
    "client",
    "client_connections",
    "valgrind",
    "perf",
    "server_version",
    "interpreter",
    "interpreter_with_valgrind",
    "cpu_model",
    "glibc_tunables",
    "preload",
    "realtime_priority",
    "seconds",
]
DETAIL_COLUMNS = ["profile", "workload", "server", "kind", "name", "per_request", "processes"]
KEYS = ("profile", "workload", "server")


def _row(record: dict) -> dict:
    instructions, syscalls, tools = record.get("instructions") or {}, record.get("syscalls") or {}, record["tools"]
    few, many = (record.get("requests") or [None, None])[:2]
    client = record.get("client") or {}
    return {
        **{key: record[key] for key in (*KEYS, "language", "schema", "status", "reason", "planted_iterations")},
        "workers": record.get("workers"),
        "seconds": record["seconds"],
        "instructions_per_request": instructions.get("per_request"),
        "collector_instructions_per_request": instructions.get("collector_per_request"),
        "collector_named": instructions.get("collector_named"),
        "instruction_pairs": instructions.get("pairs"),
        "syscalls_per_request": syscalls.get("per_request"),
        "context_switches_per_request": syscalls.get("context_switches_per_request"),
        "cpu_us_per_request": syscalls.get("cpu_us_per_request"),
        "cpu_user_us_per_request": syscalls.get("cpu_user_us_per_request"),
        "cpu_system_us_per_request": syscalls.get("cpu_system_us_per_request"),
        "requests_few": few,
        "requests_many": many,
        "client": client.get("program"),
        "client_connections": client.get("connections"),
        "server_version": tools.get("server"),
        **{
            key: tools.get(key)
            for key in (
                "valgrind",
                "perf",
                "interpreter",
                "interpreter_with_valgrind",
                "cpu_model",
                "glibc_tunables",
                "preload",
                "realtime_priority",
            )
        },
    }


def _detail(record: dict) -> list[dict]:
    where = {key: record[key] for key in KEYS}
    instructions, syscalls = record.get("instructions") or {}, record.get("syscalls") or {}
    rows = [
        {**where, "kind": "class", "name": name, "per_request": value}
        for name, value in instructions.get("by_class", {}).items()
    ]
    rows += [
        {**where, "kind": "object", "name": name, "per_request": value}
        for name, value in instructions.get("by_object", {}).items()
    ]
    rows += [
        {
            **where,
            "kind": "process",
            "name": process["command"],
            "per_request": process["instructions_per_request"],
            "processes": process["processes"],
        }
        for process in instructions.get("by_command", [])
    ]
    rows += [
        {**where, "kind": "syscall", "name": name, "per_request": value}
        for name, value in syscalls.get("by_name", {}).items()
    ]
    return rows


def work_tables(paths) -> tuple[pd.DataFrame, pd.DataFrame]:
    records = [files.read_json(path) for path in sorted(map(str, paths))]
    work = pd.DataFrame([_row(record) for record in records], columns=WORK_COLUMNS)
    detail = pd.DataFrame([row for record in records for row in _detail(record)], columns=DETAIL_COLUMNS)
    return work, detail


def write_work(paths, work_csv, detail_csv) -> pd.DataFrame:
    work, detail = work_tables(paths)
    files.write_atomic(work_csv, work.to_csv(index=False))
    files.write_atomic(detail_csv, detail.to_csv(index=False))
    return work
