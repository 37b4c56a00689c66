"""Profiles scaled to the host: CPU counts, worker formulas, memory.

A profile states the conditions of its seed study (seed 001's high spec: two
hosts of many cores, 100 workers each). On a smaller host it is refused with
a message naming what is missing, unless it asks to be scaled down
(``scale_down: true``); then the CPUs and memory it gets are recorded beside
what it asked for, so no number is read as if measured on the bigger machine.
"""

from __future__ import annotations

import ast
import math
import operator
import os
import re

# Worker formulas may use these names: the server's CPUs (after scaling) and
# the host's CPUs, as in gunicorn's recommendation of 2*cpus+1.
FORMULA_FUNCTIONS = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor}
_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}
# Keys whose value may be a formula of cpus / host_cpus.
FORMULA_KEYS = ("workers", "workers_min", "threads")


class ScaleError(ValueError):
    """A profile needs more than the host has, and did not ask to be scaled."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)


def evaluate(formula, names: dict) -> int:
    """An integer from ``4``, ``"2*cpus+1"`` or ``"max(2, cpus)"``; nothing else is evaluated."""
    if isinstance(formula, bool):
        raise ValueError(f"not a count or formula: {formula!r}")
    if isinstance(formula, int):
        return formula

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in FORMULA_FUNCTIONS
            and not node.keywords
        ):
            return FORMULA_FUNCTIONS[node.func.id](*(walk(arg) for arg in node.args))
        known = ", ".join([*sorted(names), *(f"{f}()" for f in FORMULA_FUNCTIONS)])
        raise ValueError(f"{ast.unparse(node)!r} is not allowed in a formula (known: {known}, + - * / //)")

    try:
        tree = ast.parse(str(formula), mode="eval")
    except SyntaxError:
        raise ValueError(f"not a count or formula: {formula!r}") from None
    value = walk(tree)
    result = int(value)
    if result < 1:
        raise ValueError(f"{formula!r} gives {value}, less than 1")
    return result


def host_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def parse_size(value) -> int | None:
    """Bytes from an integer or a size like ``512M`` / ``1.5GiB``; None stays None."""
    if value is None or isinstance(value, int):
        return value
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KkMmGgTt]?)i?[Bb]?\s*", str(value))
    if not match:
        raise ValueError(f"not a size: {value!r}")
    power = " KMGT".index(match.group(2).upper() or " ")
    return int(float(match.group(1)) * 1024**power)


def _wanted(spec) -> tuple[int, list[int] | None]:
    """(how many CPUs, which ones or None for any) of a count or a list."""
    if isinstance(spec, int):
        return spec, None
    return len(spec), list(spec)


def resolve(profile: dict, host_cpus: list[int], memory_bytes: int) -> dict:
    """The profile with concrete CPU lists, worker counts and memory; ``scaling`` records how.

    ``server_cpus``/``client_cpus`` are lists of CPU numbers or counts (a
    count takes the lowest free CPUs, the server's first). Raises ScaleError
    when the host is too small and the profile does not say ``scale_down``.
    """
    scale = bool(profile.get("scale_down", False))
    notes: list[str] = []
    out = dict(profile)
    out["server_cpus"], out["client_cpus"] = _resolve_cpus(profile, sorted(host_cpus), scale, notes)
    out["harness_cpus"] = _harness_cpus(profile.get("harness_cpus"), out["server_cpus"], out["client_cpus"], host_cpus)
    out.update(_resolve_counts(profile, len(out["server_cpus"]), len(host_cpus)))
    out["memory_limit"] = _resolve_memory(profile["memory_limit"], memory_bytes, scale, notes)
    out["scaling"] = {
        "asked": {key: profile.get(key) for key in ("server_cpus", "client_cpus", "memory_limit", *FORMULA_KEYS)},
        "scaled": bool(notes),
        "notes": notes,
    }
    return out


def _resolve_cpus(profile: dict, host_cpus: list[int], scale: bool, notes: list[str]) -> tuple[list[int], list[int]]:
    server_n, server_list = _wanted(profile["server_cpus"])
    client_n, client_list = _wanted(profile["client_cpus"])
    missing = sorted(set(server_list or []) - set(host_cpus)) + sorted(set(client_list or []) - set(host_cpus))
    if missing or server_n + client_n > len(host_cpus):
        wanted = f"{server_n} server + {client_n} client CPUs"
        have = f"this host has {len(host_cpus)} ({host_cpus})"
        if not scale:
            detail = f"CPU(s) {missing} not available" if missing else f"needs {wanted}"
            raise ScaleError(
                "server_cpus" if (set(server_list or []) - set(host_cpus)) or not missing else "client_cpus",
                f"{detail}; {have}. Set scale_down: true in the profile (or --config scale_down=true) "
                "to run it on fewer CPUs, recorded in every result",
            )
        if len(host_cpus) < 2:
            raise ScaleError("server_cpus", f"needs at least 2 CPUs (server and load tool apart); {have}")
        # Keep the profile's split between server and client as well as the host allows.
        server_given = min(len(host_cpus) - 1, max(1, round(len(host_cpus) * server_n / (server_n + client_n))))
        client_given = min(client_n, len(host_cpus) - server_given)
        server_list, client_list = host_cpus[:server_given], host_cpus[server_given : server_given + client_given]
        notes.append(f"asked {wanted}; {have}: scaled to {server_given} + {client_given}")
    else:
        if server_list is None:
            taken = set(client_list or [])
            server_list = [c for c in host_cpus if c not in taken][:server_n]
        if client_list is None:
            client_list = [c for c in host_cpus if c not in set(server_list)][:client_n]
    if set(server_list) & set(client_list):
        raise ScaleError("client_cpus", "overlaps server_cpus: server and load tool must not share CPUs")
    return server_list, client_list


def _harness_cpus(asked, server: list[int], client: list[int], host_cpus: list[int]) -> list[int]:
    """Where the harness runs: as asked, else the CPUs nobody measured uses, else the client's."""
    if asked:
        if set(asked) & set(server):
            raise ScaleError("harness_cpus", "overlaps server_cpus: the harness must not share the server's CPUs")
        missing = sorted(set(asked) - set(host_cpus))
        if missing:
            raise ScaleError("harness_cpus", f"CPU(s) {missing} not available; this host has {sorted(host_cpus)}")
        return list(asked)
    spare = [cpu for cpu in sorted(host_cpus) if cpu not in server and cpu not in client]
    return spare or list(client)


def _resolve_counts(profile: dict, server_cpus: int, host_cpus: int) -> dict:
    names = {"cpus": server_cpus, "host_cpus": host_cpus}
    out = {}
    for key in FORMULA_KEYS:
        if profile.get(key) is None:
            continue
        try:
            out[key] = evaluate(profile[key], names)
        except ValueError as exc:
            raise ScaleError(key, str(exc)) from None
    if out.get("workers_min") is not None and out["workers_min"] > out["workers"]:
        raise ScaleError("workers_min", f"{out['workers_min']} is more than workers ({out['workers']})")
    if out.get("workers_min") is None:
        out["workers_min"] = out["workers"]
    return out


def _resolve_memory(asked, memory_bytes: int, scale: bool, notes: list[str]) -> int | None:
    try:
        limit = parse_size(asked)
    except ValueError as exc:
        raise ScaleError("memory_limit", str(exc)) from None
    if limit is not None and limit > memory_bytes:
        if not scale:
            raise ScaleError(
                "memory_limit",
                f"{asked} is more than this host's memory ({memory_bytes / 2**30:.1f} GiB); "
                "set scale_down: true to cap it",
            )
        notes.append(f"memory limit {asked} capped to the host's {memory_bytes} bytes")
        limit = memory_bytes
    return limit
