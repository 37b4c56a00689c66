"""``serverbench compare A B --metric work``: two runs' work per request, server
by server (the default where both runs counted work).

Counted work does not drift between runs the way time does: the change B/A of
a server's user-space instructions per request is read with an interval of
``exp(±h)``, h three times the largest of the server's declared spread
(``work_spread``) and, for the A/A twin's own server, its twin and variants,
the two runs' A/A spreads (``decide.work.half_width``; at least
``decide.work.SPREAD_FLOOR``), against the threshold (``--fail-above``) or the
work margin, as a share of the baseline: the rule ``compare`` reads speed by
(``margins.Question.BETWEEN_RUNS``). What counts must be the same in both runs: a server whose
version, interpreter, valgrind, CPU model (glibc picks its string functions
by CPU), worker count or client (a kept-alive connection, or one per request) differs is
*not comparable*, with the difference as its reason, never silently compared.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from serverbench.decide.compare import changes_against
from serverbench.decide.judgement import NOT_COMPARABLE
from serverbench.decide.margins import Question, Side
from serverbench.lenses.work import decide as work_lens
from serverbench.plan.releases import by_server_of_release
from serverbench.record.vocabulary import Status
from serverbench.tables.columns import WORK_CONDITION

BETWEEN_RUNS = Question.BETWEEN_RUNS

KEY = ["profile", "workload", "server"]
# A run before work.csv had a column (schema, client: serverbench.work/3) is compared without it;
# records of another schema were counted another way (the lens's procedure changed with it).
MUST_MATCH = [
    "schema",
    "workers",
    "server_version",
    "interpreter",
    "valgrind",
    "cpu_model",
    "client",
    "preload",
    "realtime_priority",
]
FIGURE = work_lens.FIGURE
COLUMNS = [*KEY, "a_instructions", "b_instructions", "ratio", "ci_low", "ci_high", "outcome", "why"]


def has_work(results: Path) -> bool:
    return (Path(results) / "work.csv").exists()


def _spreads(work: pd.DataFrame, config: dict) -> dict[tuple, float]:
    """Each (profile, workload)'s A/A spread of one run (absent: no twin measured). A server the
    config does not know (a catalogue of the run's own) has no twin declared here."""
    found = {}
    known = work["server"].isin(config["catalogue"]) & (work["status"] == Status.OK)
    for key, rows in work[known].groupby(WORK_CONDITION):
        spread = work_lens.aa_spread(rows, config)
        if spread is not None:
            found[key] = spread
    return found


def _mismatch(a: pd.Series, b: pd.Series) -> str:
    """What differs that must not; the server's version may where the runs hold two releases
    of it (the release is the change compared)."""
    releases = a.get("release") != b.get("release")
    return "; ".join(
        f"{column}: A {a[column]!r}, B {b[column]!r}"
        for column in MUST_MATCH
        if not (releases and column == "server_version")
        if column in a.index and column in b.index
        if not (pd.isna(a[column]) and pd.isna(b[column])) and a[column] != b[column]
    )


def _row(a: pd.Series, b: pd.Series, half_width: float, share: float) -> dict:
    row = {**{key: a[key] for key in KEY}, "a_instructions": a[FIGURE], "b_instructions": b[FIGURE]}
    if a["status"] != Status.OK or b["status"] != Status.OK:
        why = "; ".join(f"{side}: {r['reason']}" for side, r in (("A", a), ("B", b)) if r["status"] != Status.OK)
        return {**row, "outcome": NOT_COMPARABLE, "why": why}
    differs = _mismatch(a, b)
    if differs:
        return {**row, "outcome": NOT_COMPARABLE, "why": f"counted with different software or CPU ({differs})"}
    ratio = b[FIGURE] / a[FIGURE]
    low, high = ratio * math.exp(-half_width), ratio * math.exp(half_width)
    return {
        **row,
        "ratio": ratio,
        "ci_low": low,
        "ci_high": high,
        "outcome": work_lens.outcome(low, high, share, BETWEEN_RUNS),
    }


def _side(merged: pd.Series, columns, suffix: str) -> pd.Series:
    """One run's row out of the two runs' merged one."""
    return pd.Series({c: merged[c] if c in KEY else merged[f"{c}_{suffix}"] for c in columns})


def compare_work(a_dir: Path, b_dir: Path, config: dict, share: float | None = None) -> pd.DataFrame:
    """Every server counted in both runs: its change in work per request, B/A."""
    share = config["work_lens"]["margin"] if share is None else share
    # Two runs of two releases of a server compare as two runs of two commits: by its name.
    a, b = (by_server_of_release(pd.read_csv(Path(d) / "work.csv")) for d in (a_dir, b_dir))
    spreads = [_spreads(a, config), _spreads(b, config)]
    both = a.merge(b, on=KEY, suffixes=("_a", "_b"))
    common = [column for column in a.columns if column in b.columns]  # runs of older schemas lack some
    rows = []
    for _, merged in both.iterrows():
        side = [_side(merged, common, suffix) for suffix in ("a", "b")]
        condition = tuple(merged[c] for c in WORK_CONDITION)
        spread = max((found.get(condition, 0.0) for found in spreads), default=0.0)
        rows.append(_row(side[0], side[1], work_lens.half_width(config, spread, merged["server"]), share))
    return pd.DataFrame(rows, columns=COLUMNS)


def exit_status(table: pd.DataFrame, fail_above: float) -> tuple[int, str]:
    """1 when a server is shown doing more work by more than ``fail_above``, 0 when every
    comparable one is shown within it, 3 when the runs cannot tell; and why."""
    judged = table[table["outcome"] != NOT_COMPARABLE]
    sides = changes_against(judged, fail_above)
    worse = judged[sides == Side.ABOVE]
    if len(worse):
        named = ", ".join(f"{r.server} {r.ratio:.3f}×" for r in worse.itertuples())
        return 1, f"{len(worse)} server(s) shown doing more than {fail_above:.1%} more work per request: {named}"
    within = sides == Side.WITHIN
    if len(judged) and within.all() and len(judged) == len(table):
        return 0, f"every server shown within {fail_above:.1%} of its work per request"
    unsure = [f"{r.server}: {r.why}" for r in table[table["outcome"] == NOT_COMPARABLE].itertuples()]
    unsure += [f"{r.server}: {r.ratio:.4f}× [{r.ci_low:.4f}, {r.ci_high:.4f}]" for r in judged[~within].itertuples()]
    return 3, f"cannot tell for {len(unsure)} server(s): " + "; ".join(unsure or ["no server counted in both runs"])
