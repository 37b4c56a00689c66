"""One way to run a server, for every job kind: ``ServerSession``.

A timed cell, the work lens's lives, an operations life and the conformance probes each
start a server for a ``Target`` (profile, server, workload), use it, and stop it. The
session owns that lifecycle once:

    with ServerSession(config, target, profile, log_path) as session:
        launch = session.start()          # prepare → isolate → start → ready
        ...                               # measure, probe, reload
    session.ending                        # Status.OK, or SKIPPED / FAILED with the reason

and, on leaving the block whatever happened, stops the server tree and releases what the
launch holds (isolation, database, network; ``Launch.stop``) and removes the run directory.
How the block ended becomes an ``Ending`` by one ladder (``ladder``): ``CellSkipped`` →
skipped, ``CellFailed`` (and the job's own ``failures``, e.g. a probe's ``WireError``) →
failed with its reason, ``Interrupted`` (SIGTERM, SIGINT) goes on unrecorded, anything else is
a harness error, recorded with its traceback and either kept (the run goes on) or raised
(``harness_errors=RAISE``: the job fails, its record written first).
"""

from __future__ import annotations

import contextlib
import shutil
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from serverbench.cell import verify
from serverbench.cell.errors import CellFailed, CellSkipped, Interrupted
from serverbench.cell.launch import Launch
from serverbench.cell.verify import Verification
from serverbench.host.runenv import make_rundir, run_env
from serverbench.plan import apps
from serverbench.plan.shapes import Profile, Target
from serverbench.record.vocabulary import Status


class HarnessErrors(Enum):
    RECORD = "record"  # recorded as failed, and the job goes on (its next life, the run's next job)
    RAISE = "raise"  # recorded, then raised: the job fails non-zero (a timed cell)


@dataclass
class Ending:
    """How a job that ran a server ended: its status and reason, the harness error's traceback,
    and the load tool's output a failure carried (``CellFailed.raw_text``)."""

    status: Status = Status.OK
    reason: str | None = None
    traceback: str | None = None
    raw_text: str = ""

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


def harness_error(exc: BaseException) -> str:
    return f"harness error: {exc.__class__.__name__}: {exc}"


@contextlib.contextmanager
def ladder(
    ending: Ending,
    failures: tuple[type[BaseException], ...] = (),
    failed_prefix: str = "",
    harness_errors: HarnessErrors = HarnessErrors.RECORD,
    log_path: Path | None = None,
) -> Iterator[Ending]:
    """The outcome ladder: the block's end as ``ending`` (see the module's docstring). A harness
    error's traceback goes to ``log_path`` too, where there is one."""
    try:
        yield ending
        ending.status, ending.reason = Status.OK, None
    except CellSkipped as exc:
        ending.status, ending.reason = Status.SKIPPED, str(exc)
    except CellFailed as exc:
        ending.status, ending.reason = Status.FAILED, f"{failed_prefix}{exc}"
        ending.raw_text = exc.raw_text or ending.raw_text
    except Interrupted:
        raise
    except failures as exc:
        ending.status, ending.reason = Status.FAILED, f"{failed_prefix}{exc}"
    except BaseException as exc:
        ending.status, ending.reason = Status.FAILED, harness_error(exc)
        ending.traceback = traceback.format_exc()
        if log_path is not None:
            with Path(log_path).open("a") as log:
                log.write(ending.traceback)
        if harness_errors is HarnessErrors.RAISE or not isinstance(exc, Exception):
            raise


class ServerSession:
    """One server started for a ``Target`` and always stopped (the module's docstring).

    ``wrapper``: the prefix each server process starts under, by its place among them (a
    backend 0, its front 1; the work lens's counters, a file each);
    ``before_stop``: called with the launch before it is stopped (the timed cell's phase
    clock, the work lens's return to the normal scheduling class); ``ladder=False``: the
    block's exceptions go on to the caller (after the cleanup), who records them step by step
    (``step``) or over the job's several sessions (the work lens's lives).
    """

    def __init__(
        self,
        config: dict,
        target: Target,
        profile: Profile,
        log_path,
        env: dict | None = None,
        *,
        wrapper: Callable[[int], list[str]] | None = None,
        before_stop: Callable[[Launch], None] | None = None,
        ladder: bool = True,
        failures: tuple[type[BaseException], ...] = (),
        failed_prefix: str = "",
        harness_errors: HarnessErrors = HarnessErrors.RECORD,
    ):
        self.config, self.target, self.profile = config, target, profile
        self.log_path, self.env = Path(log_path), env if env is not None else run_env()
        self.wrapper, self.before_stop = wrapper, before_stop
        self.records = ladder
        self.failures, self.failed_prefix, self.harness_errors = failures, failed_prefix, harness_errors
        self.ending = Ending()
        self.rundir: Path | None = None
        self.launch: Launch | None = None
        self.stopped_server = False  # whether a server was running when the session stopped it
        self.checks: list[Verification] = []  # the answers verified (verify), the failing one last
        self._prepared = False
        self._exits = contextlib.ExitStack()

    def __enter__(self) -> ServerSession:
        self.rundir = make_rundir()
        self.launch = Launch(self.config, self.target, self.profile, self.rundir, self.log_path, self.env)
        if self.wrapper is not None:
            self.launch.wrapper = self.wrapper
        if self.records:
            self._exits.enter_context(
                ladder(self.ending, self.failures, self.failed_prefix, self.harness_errors, self.log_path)
            )
        self._exits.callback(shutil.rmtree, self.rundir, ignore_errors=True)
        self._exits.callback(self._stop)
        return self

    def __exit__(self, *exc_info) -> bool:
        return self._exits.__exit__(*exc_info)

    @contextlib.contextmanager
    def step(self) -> Iterator[Ending]:
        """One step of a session its job keeps open across steps (``ladder=False``: the front
        lens measures two deployments in turn): the step's end recorded in ``ending`` by the
        session's ladder, with its ``failures``, and the session left open for the next."""
        with ladder(self.ending, self.failures, self.failed_prefix, self.harness_errors, self.log_path):
            yield self.ending

    def prepare(self) -> Launch:
        """Placeholders, argv, network, database, versions: everything before the server's cgroup."""
        if not self._prepared:
            self.launch.prepare()
            self._prepared = True
        return self.launch

    def start(self, begin: Callable[[str], None] | None = None, ready: bool = True) -> Launch:
        """Prepare (if not yet), isolate, start and, unless ``ready=False`` (a job that times
        readiness itself), wait until the server answers; ``begin`` names each phase as it starts."""
        launch = self.prepare()
        launch.isolate()
        if begin:
            begin("start")
        launch.start()
        if ready:
            if begin:
                begin("ready")
            launch.wait_ready()
        return launch

    def verify(self, workload: str | None = None, timeout: float | None = None) -> list[Verification]:
        """The answers checked once the server answers, before any load: each workload of the
        target's (every endpoint of a mix, each named where it fails; ``workload`` one of the
        app's other workloads), each check kept in ``checks``. A wrong answer raises CellFailed
        with the server's state (exited, OOM-killed) and its log's last error."""
        launch, name = self.launch, workload or self.target.workload
        timeout = self.profile.timeout if timeout is None else timeout
        self.checks = []
        for endpoint, spec in apps.endpoints(self.config, self.target.profile, name):
            expect = launch.expected_answer_of(endpoint)
            check = verify.verify(launch.host, launch.port, expect, spec["path"], timeout, apps.sent(spec))
            self.checks.append(check)
            if not check.ok:
                launch.check_alive("verification")
                where = f"{endpoint} ({spec['path']}) " if endpoint != name else ""
                raise CellFailed(f"wrong answer: {where}{check.reason}{launch.oom_note()}{launch.log_note()}")
        return self.checks

    def _stop(self) -> None:
        launch = self.launch
        try:
            if self.before_stop is not None and launch.server is not None:
                self.before_stop(launch)
        finally:
            self.stopped_server = launch.stop()
