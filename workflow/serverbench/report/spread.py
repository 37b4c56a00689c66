"""The page's "Does the server still matter?": for each app and workload of profiles with
``server_spread``, the fastest server of each language against its slowest (verdicts.csv's
``server spread`` rows, decided as any comparison), beside the app each profile hosted
(summary.csv's ``app``). Hello world first: the spread with no app work to dilute it. Then
each language's best deployment (an app on a server) against the other's, per workload
(verdicts.csv's ``best deployment`` rows)."""

from __future__ import annotations

import pandas as pd

from serverbench.record.vocabulary import Outcome

KIND = "server spread"
ACROSS = "best deployment"


def _ratio(row) -> str:
    if row["outcome"] == Outcome.NOT_COMPARABLE or pd.isna(row.get("ratio")):
        return ""
    return f"{row['ratio']:.2f}× [{row['ci_low']:.2f}–{row['ci_high']:.2f}]"


def spread_rows(verdicts: pd.DataFrame, summary: pd.DataFrame, titles: dict | None = None) -> list[dict]:
    """One row per app, workload and language: the pair, its req/s, the ratio with its interval, the outcome."""
    rows = verdicts[verdicts["kind"] == KIND]
    if rows.empty:
        return []
    apps = summary.dropna(subset=["app"]).groupby("profile")["app"].first() if "app" in summary else pd.Series()
    out = []
    for _, row in rows.iterrows():
        language = row.get("language_a")
        out.append(
            {
                "app": apps.get(row["profile"], row["profile"]),
                "workload": row["workload"],
                "condition": f"{row['tool']} c={row['concurrency']}",
                "language": (titles or {}).get(language, language),
                "fastest": row["a"],
                "slowest": row["b"],
                "req/s": f"{row['median_a']:,.0f} / {row['median_b']:,.0f}" if pd.notna(row.get("median_a")) else "",
                "ratio": _ratio(row),
                "outcome": row["outcome"],
            }
        )
    hello_first = {"hello": 0}
    return sorted(out, key=lambda r: (r["language"], hello_first.get(r["app"], 1), r["app"], r["workload"]))


def across_rows(verdicts: pd.DataFrame, titles: dict | None = None) -> list[dict]:
    """One row per workload and condition: the faster language's best deployment against the other's."""
    rows = verdicts[verdicts["kind"] == ACROSS]
    out = []
    for _, row in rows.iterrows():
        first, second = ((titles or {}).get(language, language) for language in (row["language_a"], row["language_b"]))
        out.append(
            {
                "workload": row["workload"],
                "condition": f"{row['tool']} c={row['concurrency']}",
                "faster": f"{first}: {row['a']}",
                "slower": f"{second}: {row['b']}",
                "req/s": f"{row['median_a']:,.0f} / {row['median_b']:,.0f}" if pd.notna(row.get("median_a")) else "",
                "ratio": _ratio(row),
                "outcome": row["outcome"],
            }
        )
    return sorted(out, key=lambda r: (r["workload"], r["condition"]))


def spread_context(verdicts: pd.DataFrame, summary: pd.DataFrame, titles: dict | None = None) -> dict | None:
    rows = spread_rows(verdicts, summary, titles)
    if not rows:
        return None
    across = across_rows(verdicts, titles)
    across_columns = list(across[0]) if across else []
    return {"columns": list(rows[0]), "rows": rows, "across": across, "across_columns": across_columns}
