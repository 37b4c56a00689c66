"""advise under a CPU limit, in words: the limit, the chosen setting's throttling and what the
rule of thumb from the host's CPUs would have cost beside it, for the recommendation's
sentence (``report``) and the deployed file's note (``deploy``)."""

from __future__ import annotations

import pandas as pd


def setting_words(row: dict) -> str:
    threads = f" × {int(row['threads'])} threads" if row["threads"] and int(row["threads"]) > 1 else ""
    model = f"{row['model']}, " if row["model"] != row["server"] else ""
    workers = int(row["workers"])
    return f"{model}{workers} worker{'s' if workers != 1 else ''}{threads}"


def _given(row: dict, key: str) -> bool:
    value = row.get(key)
    return value is not None and not pd.isna(value)


def limit_clause(row: dict) -> str:
    """Under a CPU limit: the limit, the chosen setting's throttling, and what the rule of thumb
    from the host's CPUs would have cost (capacity, p99, memory); empty without a limit."""
    if not _given(row, "cpu_limit"):
        return ""
    cpus = int(row["cpus"])
    said = f"; under a CPU limit of {row['cpu_limit']:g} (a cgroup quota, the host's {cpus} CPU(s) in its cpuset)"
    if _given(row, "throttled_periods") and _given(row, "throttled_s"):
        said += f" it was throttled in {int(row['throttled_periods'])} CFS periods ({row['throttled_s']:.2f} s)"
    if not _given(row, "rule_workers") or not _given(row, "rule_capacity_rps") or not _given(row, "capacity_rps"):
        return said
    rule = setting_words({"model": row["rule_model"], "server": row["server"], "workers": row["rule_workers"],
                     "threads": row["rule_threads"]})  # fmt: skip
    lost = row["capacity_rps"] - row["rule_capacity_rps"]
    cost = f"{lost:.0f} req/s less" if lost >= 0 else f"{-lost:.0f} req/s more"
    p99 = (
        f", p99 {row['rule_p99_ms']:.1f} ms against {row['p99_ms']:.1f} ms"
        if _given(row, "rule_p99_ms") and _given(row, "p99_ms")
        else ""
    )
    memory = ""
    if _given(row, "rule_memory_mb") and _given(row, "memory_mb"):
        extra = row["rule_memory_mb"] - row["memory_mb"]
        memory = f", {extra:.1f} MB more memory" if extra >= 0 else f", {-extra:.1f} MB less memory"
    return f"{said}; the host-CPU rule of thumb ({rule}) would have given {cost}{p99}{memory}"
