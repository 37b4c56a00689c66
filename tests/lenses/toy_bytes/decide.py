"""The toy lens's judgement: each declared pair (comparisons.pairs) by the one rule, an exact
ratio of sizes against the ±margin band, in the project's vocabulary."""

from __future__ import annotations

import pandas as pd
from serverbench.decide import margins
from serverbench.decide.judgement import Comparison
from serverbench.record.vocabulary import Kind, Outcome, Status

from toy_bytes import BytesMetric

MARGIN = 0.01


def comparisons(table: pd.DataFrame, config: dict) -> list[Comparison]:
    judged = []
    for profile, rows in table[table["status"] == Status.OK].groupby("profile"):
        sizes = dict(zip(rows["server"], rows["bytes"], strict=True))
        for a, b in config["comparisons"]["pairs"]:
            if a not in sizes or b not in sizes:
                continue
            ratio = sizes[a] / sizes[b]
            side = margins.side(ratio, ratio, MARGIN, margins.Question.IN_ONE_RUN)
            judged.append(Comparison(
                kind=Kind.NAMED, a=a, b=b, metric=BytesMetric.BYTES_PER_ANSWER, condition=(("profile", profile),),
                outcome=margins.outcome(side, Outcome.HIGHER, Outcome.LOWER), estimate=ratio,
                a_value=sizes[a], b_value=sizes[b], low=ratio, high=ratio, margin=MARGIN,
            ))  # fmt: skip
    return judged


def verdicts(table: pd.DataFrame, config: dict) -> pd.DataFrame:
    return pd.DataFrame([comparison.as_row() for comparison in comparisons(table, config)])
