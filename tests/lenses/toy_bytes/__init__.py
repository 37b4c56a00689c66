"""A toy lens, the tests' own (tests/test_lens.py): how many bytes each server sends per
answer. One folder and one registry entry (config `lenses: [toy_bytes]`, this folder's
parent on PYTHONPATH); nothing else in the repository names it."""

from enum import StrEnum
from pathlib import Path

from serverbench.lens import Inputs, Lens, Place, Words, per_server


class BytesMetric(StrEnum):
    """What the toy judges its pairs on: a word of its own (``lens.Words``), not the core's."""

    BYTES_PER_ANSWER = "bytes per answer"


def _section(tables: dict, inputs: Inputs) -> dict | None:
    from toy_bytes.report import context

    return context(tables["toy_bytes.csv"], tables["toy_bytes_verdicts.csv"])


def _markdown(context: dict) -> str:
    from toy_bytes.report import markdown

    return markdown(context)


def _console(results: Path, inputs) -> None:
    from toy_bytes.report import console

    console(results / "toy_bytes_verdicts.csv")


LENS = Lens(
    name="toy_bytes",
    question="How many bytes does each server send per answer?",
    folder=Path(__file__).parent,
    place=Place.AFTER,
    jobs=per_server("toy_bytes", lambda config, matrix, cell: True),
    tables=("toy_bytes.csv", "toy_bytes_verdicts.csv"),
    section=_section,
    markdown=_markdown,
    console=_console,
    words=Words(metrics=BytesMetric),
)
