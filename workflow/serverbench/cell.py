"""One cell, start to finish: isolate → start → ready → verify → warm up →
load + monitor → stop → write.

Whatever the server or load tool does is recorded: the job only fails
(non-zero) on a harness bug, and even then the server tree is stopped first.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path

from serverbench import REPO_ROOT, __version__, docker, fairness, isolation, loadgen, parsers, results, servers, verify
from serverbench import config as cfg
from serverbench import flags as flagging
from serverbench.docker import DockerIsolation
from serverbench.isolation import Isolation
from serverbench.monitor import Monitor
from serverbench.network import Network, NetworkError
from serverbench.results import config_hash


class CellFailed(Exception):
    """The server or tool misbehaved; the cell is recorded as failed."""


class CellSkipped(Exception):
    """A program the cell needs is absent; the cell is recorded as skipped."""


class Interrupted(BaseException):
    """SIGTERM or SIGINT reached the job: stop the server, write nothing."""


def _interrupt(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def run_env() -> dict:
    """Environment for servers and tools: this interpreter's bin first on PATH."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    path = [bindir, *env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(os.pathsep)]
    # Servers such as nginx and apache2 live in sbin, which a non-login PATH may lack.
    path += [d for d in ("/usr/local/sbin", "/usr/sbin", "/sbin") if d not in path]
    env["PATH"] = os.pathsep.join(path)
    return env


def _version(argv, env) -> str | None:
    return servers.run_capture([str(a) for a in argv], env=env) if argv else None


def make_rundir() -> Path:
    """A private run directory holding a readable copy of the apps.

    Servers that drop privileges (Apache's children, mod_wsgi-express,
    Unit's application processes) cannot read a checkout under a 0700 home,
    so they get the apps from here. The directory itself can be traversed but
    not listed (0711); control sockets inside it are the server's own.
    """
    rundir = Path(tempfile.mkdtemp(prefix="serverbench-run-"))
    rundir.chmod(0o711)
    shutil.copytree(REPO_ROOT / "apps", rundir / "apps", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [rundir / "apps", *(rundir / "apps").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return rundir


class CellRun:
    def __init__(self, config: dict, cell: cfg.Cell, json_path, raw_path, log_path):
        self.config = config
        self.cell = cell
        self.profile = cfg.effective_profile(config, cell.profile)
        self.server_spec = config["catalogue"][cell.server]
        self.workload = config["app_workloads"][cell.workload]
        self.tool_spec = config["load_tools"][cell.tool]
        self.json_path = Path(json_path)
        self.raw_path = Path(raw_path)
        self.log_path = Path(log_path)
        self.record = results.new_record(cell, self.server_spec["language"], self.server_spec.get("family"))
        self.env = run_env()
        self.server: servers.ServerProcess | None = None
        self.isolation: Isolation | None = None
        self.network: Network | None = None

    def _argv(self, template, values: dict) -> list[str]:
        """Render an argv and apply the config's program paths (``programs``)."""
        if not template:
            return []
        rendered = servers.render_argv(template, values) if values else [str(a) for a in template]
        return cfg.resolve_program(self.config, rendered)

    def phase(self, name: str) -> None:
        self.record["phase"] = name
        self.record["timing"][name] = round(time.time(), 4)

    def run(self) -> dict:
        record = self.record
        record["timing"]["job_start"] = round(time.time(), 4)
        record["harness"] = {"version": __version__, "python": sys.version.split()[0]}
        order = [c.relpath for c in cfg.shuffled_cells(self.config)]
        record["order"] = {
            "seed": self.config["seed"],
            "position": order.index(self.cell.relpath) + 1 if self.cell.relpath in order else None,
            "of": len(order),
        }
        record["config_sha256"] = config_hash(self.config)
        record["environment"] = os.path.relpath(
            Path(self.config["results"]) / "environment.json", self.json_path.parent
        )
        self.raw_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_bytes(b"")
        rundir = make_rundir()
        raw_text = ""
        try:
            raw_text = self._measure(rundir)
            record["status"], record["reason"] = "ok", None
        except CellSkipped as exc:
            record["status"], record["reason"] = "skipped", str(exc)
        except CellFailed as exc:
            record["status"], record["reason"] = "failed", str(exc)
            raw_text = getattr(exc, "raw_text", "") or raw_text
        except Interrupted:
            # An interrupted cell was not measured: leave no result, so a rerun redoes it.
            self._teardown()
            raise
        except BaseException as exc:
            record["status"] = "failed"
            record["reason"] = f"harness error: {exc.__class__.__name__}: {exc}"
            record["traceback"] = traceback.format_exc()
            self._teardown()
            self._write(raw_text)
            raise
        finally:
            self._teardown()
            shutil.rmtree(rundir, ignore_errors=True)
        record["flags"] = flagging.cell_flags(record, self.config["flags"])
        self._write(raw_text)
        return record

    def _write(self, raw_text: str) -> None:
        self.record["timing"]["job_end"] = round(time.time(), 4)
        self.record["raw"] = {"load": self.raw_path.name, "server_log": self.log_path.name}
        results.write_atomic(self.raw_path, raw_text)
        results.write_json(self.json_path, self.record)

    def _measure(self, rundir: Path) -> str:
        record, profile = self.record, self.profile
        record["scaling"] = profile["scaling"]
        record["workload"] = {"name": self.cell.workload, "path": self.workload["path"]}
        self.phase("prepare")
        if not cfg.serves(self.server_spec, self.cell.workload):
            raise CellSkipped(
                f"{self.cell.server} answers only {', '.join(self.server_spec['workloads'])}, "
                f"not the {self.cell.workload} workload"
            )
        record["time_wait"] = isolation.drain_time_wait(profile["time_wait_max"])
        try:
            self.network = Network(profile.get("network", "loopback")).setup()
        except NetworkError as exc:
            raise CellFailed(f"network setup failed: {exc}") from None
        record["network"] = self.network.describe()
        host = self.network.server_address
        port = servers.free_port(host if self.network.namespace is None else "127.0.0.1")
        values = {
            "host": host,
            "port": port,
            "workers": profile["workers"],
            "workers_min": profile["workers_min"],
            "threads": profile["threads"],
            "backlog": profile["backlog"],
            "apps": str(rundir / "apps"),
            "rundir": str(rundir),
            "root": str(REPO_ROOT),
            "venv": sys.prefix,
            "user": pwd.getpwuid(os.getuid()).pw_name,
        }
        argv = self._argv(self.server_spec["command"], values)
        record["server"]["argv"] = argv
        record["server"]["files"] = servers.render_files(self.server_spec.get("files", {}), values, rundir)
        somaxconn = isolation.sysctl_int("net.core.somaxconn")
        record["limits"] = {
            "backlog": profile["backlog"],
            "somaxconn": somaxconn,
            "effective_backlog": min(profile["backlog"], somaxconn) if somaxconn else profile["backlog"],
            "nofile": isolation.raise_nofile(),
        }
        record["server"]["host"], record["server"]["port"] = host, port
        in_docker = profile.get("isolation") == "docker"
        if in_docker:
            image = self._docker_image()
        elif shutil.which(argv[0], path=self.env["PATH"]) is None:
            raise CellSkipped(f"server program {argv[0]!r} not found on PATH")

        def inside(command):
            # Versions are asked where the server runs: in docker mode, in its image.
            return ["docker", "run", "--rm", image, *command] if in_docker and command else command

        record["server"]["version"] = _version(inside(self._argv(self.server_spec.get("version"), {})), self.env)
        language = self.config["languages"][self.server_spec["language"]]
        interpreter = self.server_spec.get("interpreter") or language.get("version")
        record["server"]["interpreter"] = _version(inside(self._argv(interpreter, {})), self.env)

        url = f"http://{host}:{port}{self.workload['path']}"
        tool_values = loadgen.tool_values(profile, self.cell.concurrency, url)
        try:
            tool_argv = loadgen.build_argv(self.tool_spec, tool_values, self.env["PATH"])
        except loadgen.ToolMissing as exc:
            raise CellSkipped(str(exc)) from None
        record["client"]["argv"] = tool_argv
        record["client"]["version"] = _version(self.tool_spec.get("version"), self.env)

        limits = {
            "cpus": list(profile["server_cpus"]),
            "memory_limit": cfg.parse_size(profile["memory_limit"]),
            "label": f"serverbench-{self.cell.server}",
        }
        if in_docker:
            self.isolation = DockerIsolation(**limits, container=f"serverbench-{uuid.uuid4().hex[:12]}").setup()
        else:
            self.isolation = Isolation(**limits).setup()
        record["isolation"] = {
            **self.isolation.describe(),
            "server_cpus": profile["server_cpus"],
            "client_cpus": profile["client_cpus"],
        }

        self.phase("start")
        extra_env = self.server_spec.get("env", {})
        env = {**self.env, **dict(zip(extra_env, servers.render_argv(extra_env.values(), values), strict=True))}
        members = []
        if self.server_spec.get("backend"):
            backend_argv = self._argv(self.server_spec["backend"], values)
            record["server"]["backend_argv"] = backend_argv
            members.append(
                servers.ServerProcess(self.network.wrap(backend_argv), self.log_path, self.isolation, REPO_ROOT, env)
            )
        if in_docker:
            if self.server_spec.get("backend"):
                raise CellSkipped("docker isolation runs one server command; servers with a backend are not supported")
            rendered_env = dict(zip(extra_env, servers.render_argv(extra_env.values(), values), strict=True))
            argv = docker.run_argv(
                image,
                argv,
                name=self.isolation.container,
                cpus=self.isolation.cpus,
                memory_limit=self.isolation.memory_limit,
                nofile=self.isolation.nofile,
                mounts=[rundir],
                env=rendered_env,
                workdir=rundir,
            )
            record["server"]["docker_argv"] = argv
        members.append(servers.ServerProcess(self.network.wrap(argv), self.log_path, self.isolation, REPO_ROOT, env))
        self.server = servers.ServerGroup(members)
        try:
            for member in members:
                member.start()
                if member is not members[-1]:
                    socket_path = servers.render_argv([self.server_spec["backend_socket"]], values)[0]
                    servers.wait_for_socket(socket_path, members, profile["ready_timeout"])
            if in_docker:
                self._attach_container()
            if "control" in self.server_spec:
                self._configure_by_api(values, members)
            self.phase("ready")
            record["server"]["ready_s"] = round(self.server.wait_ready(host, port, profile["ready_timeout"]), 4)
        except servers.ServerError as exc:
            raise CellFailed(f"server did not start: {exc}") from None
        pattern = self.server_spec.get("interpreter_from_log")
        if pattern:
            found = re.search(pattern, self.log_path.read_text(errors="replace"), re.M)
            record["server"]["interpreter"] = found.group(1) if found else None
        record["server"]["pid"] = self.server.pid

        self.phase("verify")
        expect = cfg.expected_answer(self.server_spec, self.workload, self.cell.workload)
        check = verify.verify(host, port, expect, path=self.workload["path"], timeout=profile["timeout"])
        record["verify"] = check.as_dict()
        if not check.ok:
            self._check_alive("verification")
            raise CellFailed(f"wrong answer: {check.reason}{self._oom_note()}")

        deadline = profile["duration"] + profile["warmup"] + 10 * profile["timeout"] + 60
        if profile["warmup"] > 0:
            self.phase("warmup")
            warm_values = dict(tool_values, duration=f"{profile['warmup']:g}")
            warm_values["requests"] = max(
                self.cell.concurrency, round(tool_values["requests"] * profile["warmup"] / profile["duration"])
            )
            loadgen.run(
                loadgen.build_argv(self.tool_spec, warm_values, self.env["PATH"]),
                profile["client_cpus"],
                deadline,
                self.env,
            )
            self._check_alive("warm-up")

        self.phase("load")
        sampler = self._connection_sampler(host, port, check.keepalive)
        with Monitor(self.server, profile["sample_interval"]) as monitor:
            with sampler:
                tool_run = loadgen.run(tool_argv, profile["client_cpus"], deadline, self.env)
            if profile.get("idle_after"):
                # Keep watching the idle server: autoscaling servers shed workers now.
                monitor.mark("idle")
                self.phase("idle")
                time.sleep(profile["idle_after"])
        record["server"]["usage"] = monitor.summary()
        record["server"]["samples"] = monitor.samples
        record["server"]["autoscale"] = monitor.scaling()
        record["client"].update(
            exit_code=tool_run.exit_code,
            wall_s=round(tool_run.wall_s, 4),
            cpu_s=round(tool_run.cpu_s, 4),
            cpu_percent=round(tool_run.cpu_percent, 2),
            timed_out=tool_run.timed_out,
        )
        self._check_alive("load", raw_text=tool_run.output)
        try:
            record["load"] = parsers.parse(self.tool_spec["parser"], tool_run.output)
        except parsers.ParseError as exc:
            if tool_run.timed_out:
                why = f"{self.cell.tool} was killed at its {deadline:g} s deadline, unfinished"
            else:
                why = f"{self.cell.tool} gave no report (exit {tool_run.exit_code}): {exc}"
            if isinstance(sampler, fairness.ConnectionSampler):
                # Which connections were left waiting is the likely story of a run that never ended.
                record["fairness"] = sampler.summary(None)
            failure = CellFailed(f"{why}{self._oom_note()}")
            failure.raw_text = tool_run.output
            raise failure from None
        record["fairness"] = self._fairness(url, check.keepalive, sampler, record["load"]["requests_per_s"])
        self._check_alive("fairness probe", raw_text=tool_run.output)
        return tool_run.output

    def _docker_image(self) -> str:
        """The language's image, built from its Dockerfile if the engine lacks it."""
        problem = docker.engine_problem()
        if problem:
            raise CellSkipped(f"docker isolation: {problem}")
        spec = (self.config.get("docker_images") or {}).get(self.server_spec["language"])
        if not spec:
            raise CellSkipped(f"docker isolation: no docker_images entry for {self.server_spec['language']!r}")
        present = (
            subprocess.run(
                ["docker", "image", "inspect", spec["image"]], capture_output=True, env=self.env, timeout=60
            ).returncode
            == 0
        )
        if not present:
            build = docker.build_argv(spec["image"], REPO_ROOT / spec["dockerfile"], REPO_ROOT)
            with open(self.log_path, "ab") as log:
                done = subprocess.run(build, stdout=log, stderr=subprocess.STDOUT, env=self.env)
            if done.returncode != 0:
                raise CellFailed(f"docker build of {spec['image']} failed (exit {done.returncode}); see the server log")
        self.record["isolation_image"] = spec["image"]
        return spec["image"]

    def _attach_container(self) -> None:
        deadline = time.monotonic() + self.profile["ready_timeout"]
        while not self.isolation.attach():
            self._check_alive("container start")
            if time.monotonic() > deadline:
                raise servers.ServerError(f"container {self.isolation.container} did not start in time")
            time.sleep(0.1)
        self.record["isolation"].update(self.isolation.describe())

    def _configure_by_api(self, values: dict, members) -> None:
        """PUT the rendered config to the server's control socket (NGINX Unit)."""
        control = self.server_spec["control"]
        socket_path = servers.render_argv([control["socket"]], values)[0]
        servers.wait_for_socket(socket_path, members, self.profile["ready_timeout"])
        body = Path(self.record["server"]["files"][control["file"]]).read_bytes()
        try:
            status, answer = servers.put_control(socket_path, control.get("path", "/config"), body)
        except OSError as exc:
            raise servers.ServerError(f"control API on {socket_path} failed: {exc}") from None
        self.record["server"]["control"] = {"status": status, "answer": answer.strip()[:2000]}
        if status != 200:
            raise servers.ServerError(f"control API refused the config ({status}): {answer.strip()[:500]}")

    def _connection_sampler(self, host: str, port: int, keepalive: str):
        """Reads the client's sockets during the load when fairness is measured from them."""
        if self.profile["fairness"] != "connections" or keepalive != "keeps":
            return contextlib.nullcontext()
        timed = "{duration}" in " ".join(map(str, self.tool_spec["command"]))
        interval = fairness.sampling_interval(self.profile["duration"] if timed else None)
        return fairness.ConnectionSampler(host, port, interval, self.env)

    def _fairness(self, url: str, keepalive: str, sampler, requests_per_s: float | None) -> dict:
        """How evenly the connections were served (see serverbench.fairness).

        Only meaningful where connections are kept: a server that closes them
        serves each request on a fresh connection.
        """
        method = self.profile["fairness"]
        if method == "off":
            return {"status": "off"}
        if keepalive != "keeps":
            return {"method": method, "status": "not applicable", "reason": f"server keep-alive class is {keepalive}"}
        if method == "connections":
            return sampler.summary(requests_per_s)
        return fairness.h2load_probe(
            url, self.cell.concurrency, self.profile["fairness_duration"], self.profile, self.env
        )

    def _oom_note(self) -> str:
        kills = self.isolation.oom_kills() if self.isolation else None
        return f" (cgroup OOM kills: {kills})" if kills else ""

    def _check_alive(self, during: str, raw_text: str = "") -> None:
        code = self.server.exit_code()
        if code is not None:
            failure = CellFailed(f"server exited with code {code} during {during}{self._oom_note()}")
            failure.raw_text = raw_text
            raise failure

    def _teardown(self) -> None:
        if self.server is not None:
            self.phase("stop")
            stop = self.server.stop(self.profile["stop_grace"])
            self.record["server"]["stop"] = stop
            if self.isolation is not None:
                self.record["server"]["oom_kills"] = self.isolation.oom_kills()
            self.server = None
        if self.isolation is not None:
            self.isolation.cleanup()
            self.isolation = None
        if self.network is not None:
            self.network.cleanup()
            self.network = None


def run_cell(config: dict, cell: cfg.Cell, json_path, raw_path, log_path) -> dict:
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return CellRun(config, cell, json_path, raw_path, log_path).run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
