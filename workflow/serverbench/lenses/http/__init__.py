"""Does each server speak HTTP? Each server of a run probed over raw sockets before its cells:
keep-alive, pipelining, HEAD, Date, bodies, refusals, a slow client, its app under its
language's linter, and how it reads a malformed or ambiguous request (request framing: RFC 9112
and RFC 9110's MUSTs, SHOULDs and MAYs). Its result never changes a req/s figure (docs/architecture.md).

One lens, not two: the conformance checks and the framing cases run in the same job against the
same server start and land in the same table (conformance.csv, framing's rows in `group`
"request framing"), and releases reads both through one check (conformance_met)."""

from pathlib import Path

from serverbench.lens import Inputs, Lens, Place, deferred

http_context, http_markdown, print_http = deferred(f"{__name__}.report", "http_context", "http_markdown", "print_http")

TABLE = "conformance.csv"


def _jobs(config, matrix) -> list[str]:
    """A job per (profile, server) whose probes stand for the server's cells (config
    `conformance`): a server probed once for the profiles that run it alike
    (``Matrix.conformance_profile``)."""
    if not config["conformance"]:
        return []
    pairs = {(matrix.conformance_profile(cell.profile, cell.server), cell.server) for cell in matrix.cells}
    return [f"conformance/{profile}/{server}.json" for profile, server in sorted(pairs)]


def _section(tables: dict, inputs: Inputs) -> dict | None:
    # The pairs the run compared are in its verdicts, beside the lens's table in the results directory.
    return http_context(tables[TABLE], tables[TABLE].with_name("verdicts.csv"))


LENS = Lens(
    name="http",
    question="Does each server speak HTTP as the RFCs ask, and read a malformed request safely?",
    folder=Path(__file__).parent,
    place=Place.CLOSING,
    jobs=_jobs,
    tables=(TABLE,),
    section=_section,
    markdown=http_markdown,
    # At the run's end only (no rule `answered`: a closing lens's lines read the run's verdicts).
    console=lambda results, inputs: print_http(results / TABLE, results / "verdicts.csv"),
)
