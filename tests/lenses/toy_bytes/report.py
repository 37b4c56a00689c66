"""The toy lens's words: its section, which the core writes to the page, answers.md and the console."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from serverbench.lens import Medium, Paragraph, Section, Sentences

TITLE = "Bytes per answer"


def sentence(row) -> str:
    return f"{row['a']} sends {row['ratio']:.3f}× the bytes of {row['b']} per answer: {row['outcome']}"


def section(table_csv, verdicts_csv) -> Section | None:
    table = pd.read_csv(table_csv)
    if table.empty:
        return None
    judged = pd.read_csv(verdicts_csv) if Path(verdicts_csv).stat().st_size > 1 else pd.DataFrame()
    sizes = [f"{row['server']}: {row['bytes']:g} bytes" for _, row in table.iterrows()]
    sentences = [sentence(row) for _, row in judged.iterrows()]
    return Section(
        TITLE,
        (
            Paragraph(f"{TITLE}:", Medium.CONSOLE),
            Sentences(sizes, Medium.PAGE),
            Sentences(sentences, Medium.PAGE | Medium.CONSOLE),
            # answers.md lists the sizes and the comparisons together.
            Sentences([*sizes, *sentences], Medium.MARKDOWN),
        ),
    )
