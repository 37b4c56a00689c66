"""The toy lens's words: its section, its paragraph of answers.md, its console lines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def sentence(row) -> str:
    return f"{row['a']} sends {row['ratio']:.3f}× the bytes of {row['b']} per answer: {row['outcome']}"


def context(table_csv, verdicts_csv) -> dict | None:
    table = pd.read_csv(table_csv)
    if table.empty:
        return None
    judged = pd.read_csv(verdicts_csv) if Path(verdicts_csv).stat().st_size > 1 else pd.DataFrame()
    return {
        "rows": table.to_dict("records"),
        "sentences": [sentence(row) for _, row in judged.iterrows()],
    }


def markdown(context: dict) -> str:
    lines = ["## Bytes per answer", ""]
    lines += [f"- {row['server']}: {row['bytes']:g} bytes" for row in context["rows"]]
    lines += [f"- {text}" for text in context["sentences"]]
    return "\n".join(lines) + "\n\n"


def console(verdicts_csv: Path) -> None:
    if not verdicts_csv.exists() or verdicts_csv.stat().st_size <= 1:
        return
    print("\nBytes per answer:")
    for _, row in pd.read_csv(verdicts_csv).iterrows():
        print(f"  - {sentence(row)}")
