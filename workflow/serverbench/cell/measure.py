"""Measuring a started server: warm-up, the load with the monitor (and the
socket sampler) running beside it, parsing the tool's report, fairness.

Each step fills its own sections (``Measured``: the cell's phases put them in
the record); ``raw_text`` keeps the load tool's own output for the file
beside the result.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field

from serverbench.cell import fairness, loadgen, parsers, rate
from serverbench.cell.errors import CellFailed, CellSkipped
from serverbench.cell.launch import Launch
from serverbench.cell.monitor import Monitor
from serverbench.cell.selfcheck import idle_timeout, self_checks, steady_state
from serverbench.cell.windows import windows
from serverbench.host.runenv import version_of
from serverbench.plan import apps
from serverbench.plan.shapes import Cell, Profile
from serverbench.plan.tools import is_open_loop, is_timed, takes_whole_seconds
from serverbench.record.sections import (
    Autoscale,
    Checks,
    ClientSection,
    Fairness,
    LoadResult,
    OpenLoop,
    Steady,
    Usage,
    Warmup,
    Windows,
)


@dataclass
class Measured:
    """What measuring found out: the record's sections that are the measurement's own."""

    client: ClientSection = field(default_factory=ClientSection)
    warmup: Warmup | None = None
    usage: Usage = field(default_factory=Usage)
    samples: list[dict] = field(default_factory=list)
    autoscale: Autoscale = field(default_factory=Autoscale)
    load: LoadResult | None = None
    open_loop: OpenLoop | None = None
    fairness: Fairness | None = None
    checks: Checks | None = None
    steady: Steady | None = None
    windows: Windows | None = None


class Measure:
    def __init__(self, config, cell: Cell, profile: Profile, launch: Launch, plan=None):
        """``plan``: a rate cell's offered rate and duration (serverbench.plan.rates.plan). The tools
        run in the launch's environment (in docker mode, the one that reaches the engine)."""
        self.cell, self.profile, self.launch, self.env = cell, profile, launch, launch.env
        self.plan = plan
        self.found = Measured()
        env = self.env
        self.tool_spec = config["load_tools"][cell.tool]
        self.catalogue_entry = launch.spec
        self.starved_share = config["flags"]["starved_share"]
        self.full_speed = config["full_speed"]
        workload = apps.workloads(config, cell.profile)[cell.workload]
        first = apps.endpoints(config, cell.profile, cell.workload)[0][1]
        self.url = f"http://{launch.host}:{launch.port}{first['path']}"
        duration = plan["duration_s"] if plan else profile.duration
        self.values = loadgen.tool_values(profile, cell.concurrency, self.url, duration)
        if apps.needs_script(workload):
            self._scripted(workload, apps.workloads(config, cell.profile))
        if plan:
            self.values["rate"] = f"{plan['offered_rps']:g}"
        self.deadline = profile.tool_deadline(duration)
        self.raw_text = ""
        try:
            self.argv = loadgen.build_argv(self.tool_spec, self.values, env["PATH"])
        except loadgen.ToolMissing as exc:
            raise CellSkipped(str(exc)) from None
        self.found.client = ClientSection(argv=self.argv, version=version_of(self.tool_spec.get("version"), env))

    def _scripted(self, workload: dict, known: dict) -> None:
        """A mix, or a request beyond a GET, is sent by the tool's script (wrk's Lua:
        ``{wrk_report}``); a tool without one sends a GET of one path and cannot."""
        if "{wrk_report}" not in " ".join(map(str, self.tool_spec["command"])):
            what = "mixes paths by weight" if "mix" in workload else "sends more than a GET"
            raise CellSkipped(f"the {self.cell.workload} workload {what} through wrk's Lua; {self.cell.tool} cannot")
        parts = [known[name] for name in apps.mix_order(workload["mix"])] if "mix" in workload else [workload]
        requests = [{"path": part["path"], **apps.sent(part)} for part in parts]
        self.values["wrk_report"] = str(loadgen.request_script(self.launch.rundir, requests))

    def warm_up(self) -> None:
        """Unmeasured load at the same concurrency; recorded when the tool had to be killed.
        A tool of whole seconds given a fraction runs for the next whole second and is
        interrupted at the warm-up's time."""
        profile = self.profile
        interrupt_at = None
        duration = profile.warmup
        if takes_whole_seconds(self.tool_spec) and not float(duration).is_integer():
            interrupt_at, duration = duration, math.ceil(duration)
        values = dict(self.values, duration=f"{duration:g}")
        values["requests"] = max(
            self.cell.concurrency, round(self.values["requests"] * profile.warmup / profile.duration)
        )
        argv = loadgen.build_argv(self.tool_spec, values, self.env["PATH"])
        run = loadgen.run(
            argv, profile.client_cpus, self.deadline, self.env, profile.client_cpu_quota, interrupt_at_s=interrupt_at
        )
        self.found.warmup = Warmup(wall_s=round(run.wall_s, 4), exit_code=run.exit_code, timed_out=run.timed_out)
        self.launch.check_alive("warm-up")
        if run.timed_out:
            stalled = f"the warm-up was killed at its {self.deadline:g} s deadline: the server stalled"
            raise CellFailed(f"{stalled}{self.launch.oom_note()}")
        if run.exit_code != 0:
            first = next((line.strip() for line in run.output.splitlines() if line.strip()), "no output")
            raise CellFailed(f"the warm-up's {self.cell.tool} exited with code {run.exit_code}: {first}", run.output)

    def load(self, keepalive: str, mark_phase) -> None:
        """The measured run: the tool pinned to the client CPUs, the monitor on the server."""
        profile, found = self.profile, self.found
        sampler = self._connection_sampler(keepalive)
        with Monitor(self.launch.server, profile.sample_interval) as monitor:
            with sampler:
                run = loadgen.run(self.argv, profile.client_cpus, self.deadline, self.env, profile.client_cpu_quota)
            if profile.idle_after:
                # Keep watching the idle server: autoscaling servers shed workers now.
                monitor.mark("idle")
                mark_phase("idle")
                time.sleep(profile.idle_after)
        self.raw_text = run.output
        found.usage, found.samples = Usage.from_dict(monitor.summary()), monitor.samples
        found.autoscale = Autoscale.from_dict(monitor.scaling())
        found.client = ClientSection(
            argv=found.client.argv,
            version=found.client.version,
            cpu_quota=profile.client_cpu_quota,
            exit_code=run.exit_code,
            wall_s=round(run.wall_s, 4),
            cpu_s=round(run.cpu_s, 4),
            cpu_percent=round(run.cpu_percent, 2),
            timed_out=run.timed_out,
        )
        self.launch.check_alive("load", raw_text=run.output)
        found.load = self._parse(run, sampler)
        self._judge(keepalive, sampler, run.output)

    def _judge(self, keepalive: str, sampler, output: str) -> None:
        """What the run achieved beyond its figures: the rate held, fairness, the self-checks."""
        found = self.found
        if self.plan:
            found.open_loop = OpenLoop.from_dict(rate.outcome(self.plan, found.load))
        found.fairness = self._fairness(keepalive, sampler, found.load.requests_per_s)
        found.checks = self_checks(found.load, found.fairness, self.cell.concurrency, not is_open_loop(self.tool_spec))
        if not is_timed(self.tool_spec) and keepalive == "keeps":
            timeout = self.catalogue_entry.keepalive_timeout_s
            bound = idle_timeout(found.load, timeout, self.profile.workers, self.cell.concurrency)
            if bound:
                found.checks.extra["idle_timeout"] = bound
        if isinstance(sampler, fairness.ConnectionSampler):
            found.steady = steady_state(sampler.snapshots, found.load)
            found.windows = windows(sampler.snapshots, found.load, self.full_speed)
        self.launch.check_alive("fairness probe", raw_text=output)
        if not found.load.requests:
            raise CellFailed(
                f"no request completed in {found.load.duration_s:g} s with {self.cell.concurrency} connections"
                f" open: the server stalled{self.launch.oom_note()}",
                output,
            )

    def _parse(self, run: loadgen.ToolRun, sampler) -> LoadResult:
        try:
            return LoadResult.from_dict(parsers.parse(self.tool_spec["parser"], run.output))
        except parsers.ParseError as exc:
            if run.timed_out:
                why = f"{self.cell.tool} was killed at its {self.deadline:g} s deadline, unfinished"
            else:
                why = f"{self.cell.tool} gave no report (exit {run.exit_code}): {exc}"
            if isinstance(sampler, fairness.ConnectionSampler):
                # Which connections were left waiting is the likely story of a run that never ended.
                self.found.fairness = Fairness.from_dict(sampler.summary(None, self.starved_share))
            raise CellFailed(f"{why}{self.launch.oom_note()}", run.output) from None

    def _connection_sampler(self, keepalive: str):
        """Reads the client's sockets during the load when fairness is measured from them."""
        if self.profile.fairness != "connections" or keepalive != "keeps" or self.plan:
            return contextlib.nullcontext()
        timed = is_timed(self.tool_spec)
        # A timed run is read every window (serverbench.cell.windows); one of a number of requests
        # (ab -n) may last a fraction of a second or minutes, so it is read less often as it goes.
        interval = self.full_speed["window_s"] if timed else fairness.sampling_interval(None)
        return fairness.ConnectionSampler(self.launch.host, self.launch.port, interval, self.env, slow_down=not timed)

    def _fairness(self, keepalive: str, sampler, requests_per_s: float | None) -> Fairness:
        """How evenly the connections were served (see serverbench.cell.fairness).

        Only meaningful where connections are kept: a server that closes them
        serves each request on a fresh connection.
        """
        method = self.profile.fairness
        if method == "off":
            return Fairness(status="off")
        if self.plan:
            return Fairness(method=method, status="not applicable", reason="open loop: the tool sets the pace")
        if keepalive != "keeps":
            reason = f"server keep-alive class is {keepalive}"
            return Fairness(method=method, status="not applicable", reason=reason)
        if method == "connections":
            return Fairness.from_dict(sampler.summary(requests_per_s, self.starved_share))
        probe = fairness.h2load_probe(
            self.url, self.cell.concurrency, self.profile.fairness_duration, self.profile, self.env
        )
        return Fairness.from_dict(probe)
