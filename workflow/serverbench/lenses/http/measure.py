"""One server's conformance job: start it as a cell of the profile would
(same argv, isolation, network), probe its HTTP behaviour over raw sockets
(serverbench.lenses.http.probes), lint its app at the application interface
(the apps' ``/lint`` path: wsgiref.validate or Plack::Middleware::Lint around
the hello world), run an answer it gave through httplint, stop it,
and write one result. A server that cannot be started is a recorded failure,
never a crash of the run; no check ever touches a req/s figure."""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from serverbench import files
from serverbench.cell.errors import interruptible
from serverbench.cell.launch import Launch
from serverbench.cell.session import ServerSession
from serverbench.cell.wire import Wire, WireError, request
from serverbench.lenses.http import framing, probes
from serverbench.lenses.http.record import CheckOutcome
from serverbench.plan import apps
from serverbench.plan.catalogue import server_entry
from serverbench.plan.config import effective_profile
from serverbench.plan.shapes import Target

# /2: request framing checks, each with its group, class and the RFC requirement it rests on;
# /3: each check's facts as fields (did, reading, words, desynchronised, met).
CONFORMANCE_SCHEMA = "conformance/3"
# What the linters say in the server's log: wsgiref.validate's assertions and the
# exceptions it raises on a missing key, Plack::Middleware::Lint's messages.
LINT_PATTERN = re.compile(r"((?:\w+Error|WSGIWarning): .*|Missing mandatory .*|.*Plack/Middleware/Lint\.pm.*)$", re.M)


# A probe job's failure says the server could not be probed (its checks are the job's findings).
PROBE_FAILED = "could not be probed: "


@dataclass
class ConformanceResult:
    schema: str
    profile: str
    server: str
    language: str
    status: str = "ok"  # ok | skipped | failed (the server could not be probed)
    reason: str | None = None
    checks: list[dict] = field(default_factory=list)
    lint_findings: list[dict] = field(default_factory=list)
    seconds: float | None = None
    started_at: float | None = None  # wall clock, as the cells' timing: the job ran before them
    ended_at: float | None = None


# The answer headers in which the app names environ keys the server left out that its spec lets
# it omit, and how much that matters in its language (info, or warn where the language's own
# reference linter refuses what its spec allows).
LINT_NOTE = "x-serverbench-lint-note"
LINT_OUTCOME = "x-serverbench-lint-outcome"


def app_lint(launch: Launch, log_path: Path, app: bool) -> probes.Check:
    """The hello answer under the language's linter (``/lint``): an assertion or a
    Lint error (a 500 and its message in the server's log) is a failed check."""
    if not app:
        return probes.Check("app_lint", CheckOutcome.INFO, "not probed: the server answers only / (no app)")
    before = log_path.stat().st_size if log_path.exists() else 0
    try:
        with Wire(launch.host, launch.port) as wire:
            wire.send(probes.get("/lint"))
            answer = wire.read_answer()
    except (OSError, WireError) as exc:
        return probes.Check("app_lint", CheckOutcome.FAIL, f"no answer under the linter ({exc})")
    time.sleep(0.2)  # a linter's complaint at close is logged after the answer
    logged = log_path.read_text(errors="replace")[before:] if log_path.exists() else ""
    complaints = LINT_PATTERN.findall(logged)
    if answer.status != 200 or complaints:
        note = complaints[0] if complaints else f"status {answer.status} under the linter"
        return probes.Check("app_lint", CheckOutcome.FAIL, note[:300], received=probes.shown(answer.raw))
    # What the server left out that its language's spec allows it to (the app says, in the spec's
    # words): the linter judged the rest, and a validator's own crash is no server failure.
    allowed = answer.header(LINT_NOTE)
    if allowed:
        said = answer.header(LINT_OUTCOME)
        outcome = CheckOutcome(said) if said in (CheckOutcome.INFO, CheckOutcome.WARN) else CheckOutcome.INFO
        return probes.Check(
            "app_lint", outcome, f"no assertion or Lint error; {allowed}"[:600], received=probes.shown(answer.raw)
        )
    return probes.Check("app_lint", CheckOutcome.PASS, "no assertion or Lint error", received=probes.shown(answer.raw))


def lint_answers(host: str, port: int, app: bool) -> list[dict]:
    """httplint's warnings on the server's answers to GET / (and /big) and HEAD /,
    each named by its request: listed, not judged, not re-implemented."""
    from httplint import HttpResponseLinter

    asked = [("GET", "/"), *([("GET", "/big")] if app else []), ("HEAD", "/")]
    findings = []
    for method, path in asked:
        with Wire(host, port) as wire:
            wire.send(request(method, path, "HTTP/1.1", [("Host", "localhost")]))
            answer = wire.read_answer(method)
        linter = HttpResponseLinter(no_content=method == "HEAD")
        linter.process_response_topline(answer.version.encode(), str(answer.status).encode(), answer.reason.encode())
        linter.process_headers([(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers])
        linter.feed_content(answer.body)
        linter.finish_content(True)
        findings += [
            {"request": f"{method} {path}", "level": note.level.value, "subject": note.subject, "note": str(note)[:200]}
            for note in linter.notes
            if note.level.value in ("bad", "warning")
        ]
    return findings


@interruptible()
def run_conformance(config: dict, profile_name: str, server: str, json_path, log_path) -> dict:
    """Probe one server of a profile and write its result (returned as written). The server
    hosts the probes' app (plan.apps.PROBE_APP), whichever app the run's cells host: the
    probes need its paths, and they judge the server's HTTP, not the app's."""
    config = apps.with_probe_app(config)
    profile = effective_profile(config, profile_name)
    spec = server_entry(config, server)
    result = ConformanceResult(CONFORMANCE_SCHEMA, profile_name, server, spec.language)
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    # Baselines answer only /: the checks that need the apps' paths say so.
    app = all(spec.answers(workload) for workload in apps.workloads(config))
    session = ServerSession(
        config,
        Target(profile_name, server),
        profile,
        log_path,
        failures=(OSError, WireError),
        failed_prefix=PROBE_FAILED,
    )
    started = time.monotonic()
    result.started_at = round(time.time(), 4)
    with session:
        launch = session.start()
        checks = [
            *probes.probe(launch.host, launch.port, app),
            *(framing.check_all(probes.Target(launch.host, launch.port, app)) if config["conformance_framing"] else []),
            app_lint(launch, log_path, app),
        ]
        result.checks = [asdict(check) for check in checks]
        try:
            result.lint_findings = lint_answers(launch.host, launch.port, app)
        except (OSError, WireError) as exc:  # a server the probes took down has nothing left to lint
            result.lint_findings = [{"request": "-", "level": "error", "subject": "", "note": f"not linted: {exc}"}]
    if not session.ending.ok:
        result.status, result.reason = session.ending.status, session.ending.reason
    result.seconds = round(time.monotonic() - started, 2)
    result.ended_at = round(time.time(), 4)
    files.write_json(json_path, asdict(result))
    return asdict(result)
