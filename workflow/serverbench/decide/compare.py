"""``serverbench compare A B``: two result sets (before and after an upgrade,
two machines, two configurations) cell by cell.

Two runs differ by more than their repeats show: hours apart, a shared machine
is a different machine, and that drift between runs is larger than the spread
within one. So each run is first normalised by something it measured itself: each
server's full-speed figure (``decide.fullspeed``: the machine's slow episodes
left out) against its host's full speed, the steadiness check's fastest chunk
(``--normalise host``, the default, where both runs made the check), or each
server against the run's ceiling at the same condition, at full speed where
the runs kept windows, else from the rounds model of delivered req/s
(``--normalise ceiling``; see ``normalisation`` for the data behind the choice).
Two runs on different hosts (CPU model or kernel) are not compared unless
asked (``--across-hosts``): a ratio between servers moves between machines
far beyond one run's interval. And the interval of a change B/A carries, beside both runs' own error,
the run-to-run variance the two runs' other servers show (their median
absolute change about zero, less their own error: robust to the one server
that did change; a t quantile on as many degrees of freedom as cells it came
from). Holm's procedure across the matched cells sets each interval's level;
the outcome is read against the margin.

``--fail-above 5%`` exits 1 when some cell is shown slower by more than 5%
(its whole interval below 0.95), 0 when every cell is shown within 5%, and 3
when the runs cannot tell, printing the change each cell could have shown.
To check a change for a regression, measure both variants inside one run
(two catalogue entries, declared as a pair): rounds interleave them and no
run-to-run drift enters the comparison.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.robust.scale import mad

from serverbench.decide import fullspeed, inference, margins
from serverbench.decide.comparability import why_not_comparable
from serverbench.decide.margins import margin_for
from serverbench.plan.releases import by_server_of_release
from serverbench.record.vocabulary import Kind, Outcome, Status

MATCH = ["profile", "workload", "tool", "server", "concurrency"]
COLUMNS = [
    *MATCH,
    "reference",
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "ratio",
    "ci_low",
    "ci_high",
    "level",
    "run_sd",
    "p_value",
    "p_holm",
    "detectable_drop",
    "outcome",
    "why",
]
ENVIRONMENT_KEYS = [
    "kernel",
    "cpu_model",
    "cpus",
    "memory_bytes",
    "serverbench",
    "git_commit",
    "config_sha256",
    "harness_python",
]
# With fewer other cells than this, the run-to-run spread is not estimated but assumed.
MIN_CELLS_FOR_RUN_SD = 3
ASSUMED_RUN_SD = 0.1  # log units: what this project's VMs show between runs hours apart
EXIT_REGRESSION, EXIT_CANNOT_TELL = 1, 3


HOST_KEYS = ["cpu_model", "kernel"]


class ResultSet(NamedTuple):
    """What ``compare`` reads of a run: its tables and environment (a plain tuple in this
    order works too, as the simulations and tests build theirs)."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    environment: dict
    windows: pd.DataFrame | None = None  # None before windows were kept


class MissingTable(FileNotFoundError):
    """A result set without a table compare needs (a usage error: exit 2)."""


def read_set(path: Path) -> ResultSet:
    """runs.csv, summary.csv and environment.json of a result set (its directory), and its
    windows.csv where it has one."""
    path = Path(path)
    for table in ("runs.csv", "summary.csv"):
        if not (path / table).exists():
            raise MissingTable(f"{path} has no {table} (is it a results directory?)")
    environment = path / "environment.json"
    windows = path / "windows.csv"
    return ResultSet(
        by_server_of_release(pd.read_csv(path / "runs.csv")),
        by_server_of_release(pd.read_csv(path / "summary.csv")),
        json.loads(environment.read_text()) if environment.exists() else {},
        by_server_of_release(pd.read_csv(windows)) if windows.exists() else None,
    )


def host_differences(env_a: dict, env_b: dict) -> list[str]:
    """The host facts (CPU model, kernel) in which two runs differ: a different condition."""
    differ = [key for key in HOST_KEYS if env_a.get(key) != env_b.get(key)]
    return [f"{key}: A {env_a.get(key)!r}, B {env_b.get(key)!r}" for key in differ]


def control_outcomes(path: Path, name: str) -> list[str]:
    """The A/A control's outcomes in a result set's verdicts.csv, one line each: what the
    run said about the same server measured twice (never faster or slower, if it holds)."""
    verdicts = Path(path) / "verdicts.csv"
    if not verdicts.exists():
        return []
    table = pd.read_csv(verdicts)
    rows = table[table["kind"] == Kind.AA]
    return [
        f"{name}: {row.a} / {row.b} ({row.tool}, c={row.concurrency}): {row.outcome}"
        + ("" if pd.isna(row.ratio) else f", {row.ratio:.3f}× [{row.ci_low:.3f}, {row.ci_high:.3f}]")
        for row in rows.itertuples()
    ]


def _excluded_because(summary: pd.DataFrame, key: tuple, excluded: set[str]) -> list[str]:
    rows = summary[(summary[MATCH] == pd.Series(key, index=MATCH)).all(axis=1)]
    return why_not_comparable(rows.iloc[0], excluded) if len(rows) else ["not measured"]


@dataclass(frozen=True)
class Change:
    """One cell's log change B/A after normalising, and its error within the two runs."""

    log_change: float
    within_var: float


def _by_round(runs: pd.DataFrame) -> dict[tuple, pd.Series]:
    """Each cell's good req/s, indexed by round (repeat r of every cell ran in round r)."""
    good = runs[(runs["status"] == Status.OK) & runs["rps"].notna()]
    return {key: group.set_index("repeat")["rps"].astype(float) for key, group in good.groupby(MATCH)}


def _log_and_var(found: inference.Estimate) -> tuple[float, float]:
    """A log ratio and its variance: the model's se, or the rank interval's width at 95%."""
    if found.se is not None:
        return found.log_ratio, found.se**2
    low, high = found.interval(0.05)
    if not (low > 0 and math.isfinite(high)):
        # Too few repeats for a rank interval at 95% (3 against 3 reach p 0.1 at best): unbounded.
        return found.log_ratio, math.inf
    return found.log_ratio, ((math.log(high) - math.log(low)) / (2 * stats.norm.ppf(0.975))) ** 2


def _windows_by_cell(windows: pd.DataFrame | None, spec: dict | None) -> dict[tuple, fullspeed.CellWindows]:
    """Each cell's pooled windows (keyed as MATCH), where the set kept them and they decide."""
    if windows is None or not spec or not spec["decides"]:
        return {}
    return {
        (*condition[:3], server, condition[3]): cell
        for condition, cells in fullspeed.windows_by_cell(windows, spec).items()
        for server, cell in cells.items()
    }


def _within(run: dict, windows: dict, key: tuple, ref_key: tuple, spec: dict | None) -> inference.Estimate | None:
    """One run's ratio of a cell to its reference: at full speed where both have windows."""
    if key in windows and ref_key in windows:
        found = fullspeed.estimate(windows[key], windows[ref_key], spec["quantile"])
        if found is not None:
            return found
    empty = pd.Series(dtype=float)
    return inference.estimate(run.get(key, empty), run.get(ref_key, empty))


def host_speed(environment: dict) -> float | None:
    """A run's host at full speed: the mean of its CPUs' fastest chunk of the steadiness
    check (ms per chunk of fixed work; smaller is faster), or None without the check."""
    check = environment.get("host_speed") or {}
    chunks = [cpu.get("fast_chunk_ms") for cpu in (check.get("cpus") or {}).values()]
    chunks = [chunk for chunk in chunks if chunk]
    return float(np.mean(chunks)) if chunks else None


def _host_change(key: tuple, windows, spec: dict, speeds: tuple) -> Change | None:
    """The cell's full-speed figure B/A, each run's scaled by its host's full speed."""
    if None in speeds or any(key not in found for found in windows):
        return None
    (log_a, se_a, _), (log_b, se_b, _) = (fullspeed.level(found[key], spec["quantile"]) for found in windows)
    if not (math.isfinite(se_a) and math.isfinite(se_b)):
        return None
    # req/s × ms per chunk: answers per chunk of the host's fixed work, the machine's speed divided out.
    return Change((log_b + math.log(speeds[1])) - (log_a + math.log(speeds[0])), se_a**2 + se_b**2)


def _change(
    run_a: dict, run_b: dict, key: tuple, reference: str | None, windows=({}, {}), spec: dict | None = None
) -> Change | None:
    """The cell's change B/A: each run's ratio to its reference (full speed, or the rounds
    model), or, without a reference, the two runs' repeats against each other (Hodges–Lehmann)."""
    empty = pd.Series(dtype=float)
    if reference is None:
        found = inference.by_ranks(run_b.get(key, empty).to_numpy(), run_a.get(key, empty).to_numpy())
        return None if found is None else Change(*_log_and_var(found))
    ref_key = (*key[:3], reference, key[4])
    within = [_within(run, found, key, ref_key, spec) for run, found in zip((run_a, run_b), windows, strict=True)]
    if None in within:
        return None
    (log_a, var_a), (log_b, var_b) = (_log_and_var(found) for found in within)
    return Change(log_b - log_a, var_a + var_b)


def _reference(config: dict, key: tuple, comparable: set[tuple]) -> str | None:
    """The run's ceiling at the cell's condition, where both runs measured it comparably."""
    ceiling = config["comparisons"]["ceiling"]
    if not ceiling or key[3] == ceiling or (*key[:3], ceiling, key[4]) not in comparable:
        return None
    return ceiling


def _run_sd(changes: dict[tuple, Change], key: tuple) -> tuple[float, float]:
    """The run-to-run spread of a change, from the cells of the two runs' other servers.

    Under "nothing changed" every other cell's change is drift between the runs,
    centred on zero, not on the cells' mean: a shift common to every cell (the
    reference's own drift) is run-to-run variance too. The spread is their median
    absolute change about zero (statsmodels' MAD, robust to the one server that
    did change, which would otherwise widen every other cell's interval), less
    their typical within-run error. Returns the spread and the degrees of freedom
    of its estimate (infinite when assumed).
    """
    others = [c for k, c in changes.items() if k[3] != key[3]]
    if len(others) < MIN_CELLS_FOR_RUN_SD:
        return ASSUMED_RUN_SD, math.inf
    spread = float(mad(np.array([c.log_change for c in others]), center=0))
    excess = spread**2 - float(np.median([c.within_var for c in others]))
    return math.sqrt(max(0.0, excess)), float(len(others))


def normalisation(a: ResultSet, b: ResultSet, normalise: str) -> str:
    """What divides each run out: its ``host``'s full speed (the steadiness check's fastest
    chunk) where both runs made the check, else their ``ceiling`` server at full speed.

    Host first, by five default runs and a run with a real 10% regression here
    (benchmarks/reproducibility.py): by the host the regression was shown in 3 of 5
    comparisons, by the ceiling in none (the ceiling's own round-to-round spread enters
    every cell), and neither raised a false alarm in 20 comparisons of unchanged runs."""
    a, b = ResultSet(*a), ResultSet(*b)
    if normalise == "host" and (host_speed(a.environment) is None or host_speed(b.environment) is None):
        return "ceiling"
    return normalise


def compare_sets(
    a: ResultSet, b: ResultSet, config: dict, margin: float | None = None, normalise: str = "host"
) -> pd.DataFrame:
    """One row per cell measured in both sets; each run normalised by its ``host``'s full speed
    (the default, where both runs made the steadiness check) or by its ``ceiling`` server."""
    a, b = ResultSet(*a), ResultSet(*b)
    (runs_a, summary_a), (runs_b, summary_b) = (a.runs, a.summary), (b.runs, b.summary)
    spec, full = config["comparisons"], config.get("full_speed")
    margin = margin_for(config, None, "compare") if margin is None else margin
    windows = tuple(_windows_by_cell(run.windows, full) for run in (a, b))
    excluded, alpha = set(spec["not_comparable_flags"]), 1 - spec["confidence"]
    keys = sorted(
        set(map(tuple, runs_a[MATCH].drop_duplicates().to_numpy()))
        & set(map(tuple, runs_b[MATCH].drop_duplicates().to_numpy()))
    )
    reasons = {
        key: [f"A: {r}" for r in _excluded_because(summary_a, key, excluded)]
        + [f"B: {r}" for r in _excluded_because(summary_b, key, excluded)]
        for key in keys
    }
    comparable = {key for key in keys if not reasons[key]}
    references = {key: _reference(config, key, comparable) for key in comparable}
    cells_a, cells_b = _by_round(runs_a), _by_round(runs_b)
    changes = {}
    if normalisation(a, b, normalise) == "host":
        speeds = (host_speed(a.environment), host_speed(b.environment))
        changes = {key: _host_change(key, windows, full, speeds) for key in comparable}
        # A cell without windows in both runs (an untimed tool) falls back to its ceiling.
        references.update({key: "host" for key, change in changes.items() if change is not None})
    for key in comparable:
        if changes.get(key) is None:
            changes[key] = _change(cells_a, cells_b, key, references[key], windows, full)
    changes = {key: change for key, change in changes.items() if change is not None}
    rows, errors = [], []  # errors: each row's (log change, its standard error, df), None where not compared
    for key in keys:
        row = dict(zip(MATCH, key, strict=True))
        old, new = cells_a.get(key, pd.Series(dtype=float)), cells_b.get(key, pd.Series(dtype=float))
        row.update(n_a=len(old), n_b=len(new), median_a=old.median(), median_b=new.median())
        if key not in changes:
            rows.append({**row, "outcome": Outcome.NOT_COMPARABLE, "why": "; ".join(reasons[key]) or "too few repeats"})
            errors.append(None)
            continue
        change, (run_sd, df) = changes[key], _run_sd(changes, key)
        se = math.sqrt(change.within_var + run_sd**2)
        p_value = float(2 * stats.t.sf(abs(change.log_change) / se, df)) if se else float(change.log_change == 0)
        rows.append(
            {
                **row,
                "reference": references[key],
                "ratio": math.exp(change.log_change),
                "run_sd": run_sd,
                "p_value": p_value,
            }
        )
        errors.append((change.log_change, se, df))
    return _decided(rows, errors, alpha, margin)


def _decided(rows: list[dict], errors: list[tuple | None], alpha: float, margin: float) -> pd.DataFrame:
    """Each compared row's Holm level, interval, outcome and detectable drop, from its error."""
    adjusted, levels = inference.holm_levels([row.get("p_value") for row in rows], alpha)
    for row, error, p_holm, level in zip(rows, errors, adjusted, levels, strict=True):
        if level is None or error is None:
            continue
        log, se, df = error
        crit = stats.t.ppf(1 - level / 2, df)
        row.update(p_holm=p_holm, level=level, ci_low=math.exp(log - crit * se), ci_high=math.exp(log + crit * se))
        row["outcome"] = _outcome(row["ci_low"], row["ci_high"], margin)
        row["detectable_drop"] = 1 - (1 - margin) * math.exp(-(crit + stats.t.ppf(inference.POWER, df)) * se)
    return pd.DataFrame(rows, columns=COLUMNS)


def _outcome(low: float, high: float, share: float) -> Outcome:
    """A change B/A against ±share of the baseline (``margins.Question.BETWEEN_RUNS``):
    slower means below 1 - share, as ``--fail-above`` promises."""
    found = margins.side(low, high, share, margins.Question.BETWEEN_RUNS)
    return margins.outcome(found, above=Outcome.FASTER, below=Outcome.SLOWER)


def environment_differences(env_a: dict, env_b: dict) -> list[str]:
    keys = ENVIRONMENT_KEYS + sorted(
        {f"versions.{k}" for k in {**env_a.get("versions", {}), **env_b.get("versions", {})}}
    )

    def get(env, key):
        return env.get("versions", {}).get(key[9:]) if key.startswith("versions.") else env.get(key)

    return [
        f"{key}: A {get(env_a, key)!r}, B {get(env_b, key)!r}" for key in keys if get(env_a, key) != get(env_b, key)
    ]


def changes_against(judged: pd.DataFrame, share: float) -> pd.Series:
    """Each row's change B/A against ±``share`` of the baseline (``margins.Question.BETWEEN_RUNS``):
    the one rule ``compare`` reads both metrics by."""
    return pd.Series(
        [
            margins.side(low, high, share, margins.Question.BETWEEN_RUNS)
            for low, high in zip(judged["ci_low"], judged["ci_high"], strict=True)
        ],
        index=judged.index,
        dtype=object,
    )


def exit_status(table: pd.DataFrame, fail_above: float) -> tuple[int, str]:
    """1 when a cell is shown slower by more than ``fail_above`` (a share), 0 when every
    comparable cell is shown within it, 3 when the runs cannot tell; and why, in words."""
    judged = table[table["outcome"] != Outcome.NOT_COMPARABLE]
    sides = changes_against(judged, fail_above)
    worse = judged[sides == margins.Side.BELOW]
    if len(worse):
        return EXIT_REGRESSION, f"{len(worse)} cell(s) shown slower by more than {fail_above:.0%}"
    within = sides == margins.Side.WITHIN
    if len(judged) and within.all():
        return 0, f"every cell shown within {fail_above:.0%}"
    unsure = judged[~within]
    could = ", ".join(f"{row.server} c={row.concurrency}: {row.detectable_drop:.0%}" for row in unsure.itertuples())
    return EXIT_CANNOT_TELL, (
        f"cannot tell whether {len(unsure)} cell(s) stayed within {fail_above:.0%}; the drop each could have "
        f"shown: {could or 'none comparable'}. Measure both variants in one run to see more (docs/statistics.md)"
    )
