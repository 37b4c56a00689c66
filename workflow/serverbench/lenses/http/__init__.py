"""Does each server speak HTTP? Each server of a run probed over raw sockets before its cells:
keep-alive, pipelining, HEAD, Date, bodies, refusals, a slow client, its app under its
language's linter, and how it reads a malformed or ambiguous request (request framing: RFC 9112
and RFC 9110's MUSTs, SHOULDs and MAYs). Its result never changes a req/s figure (docs/architecture.md).

One lens, not two: the conformance checks and the framing cases run in the same job against the
same server start and land in the same table (conformance.csv, framing's rows in `group`
"request framing"), and releases reads both through one check (conformance_met)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, MeasureJob, Place, Section, deferred

(http_section,) = deferred(f"{__name__}.report", "http_section")

TABLE = "conformance.csv"


def _jobs(config, matrix) -> list[str]:
    """A job per (profile, server) whose probes stand for the server's cells (config
    `conformance`): a server probed once for the profiles that run it alike
    (``Matrix.conformance_profile``)."""
    if not config["conformance"]:
        return []
    pairs = {(matrix.conformance_profile(cell.profile, cell.server), cell.server) for cell in matrix.cells}
    return [f"conformance/{profile}/{server}.json" for profile, server in sorted(pairs)]


def _waited_for(config, matrix, profile: str) -> list[str]:
    """The probes a profile's cells wait for: each server it runs, probed in the profile that
    stands for it (perhaps another)."""
    if not config["conformance"]:
        return []
    servers = sorted({cell.server for cell in matrix.cells if cell.profile == profile})
    return [f"conformance/{matrix.conformance_profile(profile, server)}/{server}.json" for server in servers]


def _section(tables: dict, inputs: Inputs) -> Section | None:
    # The pairs the run compared are in its verdicts, beside the lens's table in the results directory.
    return http_section(tables[TABLE], tables[TABLE].with_name("verdicts.csv"))


LENS = Lens(
    name="http",
    question="Does each server speak HTTP as the RFCs ask, and read a malformed request safely?",
    folder=Path(__file__).parent,
    # Its sentences join the Answers; its tables close the page, after the seed studies.
    place=Place.CLOSING,
    jobs=_jobs,
    tables=(TABLE,),
    section=_section,
    # A server's cells wait for its probes (bench.smk's conformance input), so they run before
    # the profile's rounds and count against its measuring budget.
    before_rounds=True,
    waited_for=_waited_for,
    # Its rule keeps the probes' name; its table rule is its own (rules.smk: its log is
    # logs/conformance.log, not the wired logs/conformance_table.log).
    measure_job=MeasureJob(
        entry="serverbench.lenses.http.measure:run_conformance",
        record="conformance/{profile}/{server}.json",
        message="probing how {wildcards.server} speaks HTTP (profile {wildcards.profile})",
        database=False,
        rule="conformance",
    ),
)
