"""A toy lens, the tests' own (tests/test_lens.py): how many bytes each server sends per
answer. One folder and one registry entry (config `lenses: [toy_bytes]`, this folder's
parent on PYTHONPATH); nothing else in the repository names it."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, MeasureJob, Place, Section, TableJob, per_server

from toy_bytes.settings import ToyBytesSettings


def _section(tables: dict, inputs: Inputs) -> Section | None:
    from toy_bytes.report import section

    return section(tables["toy_bytes.csv"], tables["toy_bytes_verdicts.csv"])


LENS = Lens(
    name="toy_bytes",
    question="How many bytes does each server send per answer?",
    folder=Path(__file__).parent,
    place=Place.AFTER,
    jobs=per_server("toy_bytes", lambda config, matrix, cell: True),
    tables=("toy_bytes.csv", "toy_bytes_verdicts.csv"),
    section=_section,
    # No rules of its own: the core wires both its jobs from these.
    measure_job=MeasureJob(
        entry="toy_bytes.measure:run",
        record="toy_bytes/{profile}/{server}.json",
        message="counting {wildcards.server}'s answers in bytes (profile {wildcards.profile})",
    ),
    table_job=TableJob(
        entry="toy_bytes.scripts.table:write_tables",
        outputs={"table": "toy_bytes.csv", "verdicts": "toy_bytes_verdicts.csv"},
        unshown=("table", "verdicts"),
    ),
    settings=ToyBytesSettings,
)
