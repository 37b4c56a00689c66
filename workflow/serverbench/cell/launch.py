"""Launching a server (for a timed cell or any other job: a ``Target``): placeholders and argv, network, versions,
isolation (cgroup or container), start, the control API, readiness.

``Launch`` fills its own sections (``Launched``: the cell's phases put them in the
record) as it goes, and owns what it
started until ``stop``: whatever fails, the cell calls ``stop`` once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pwd
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from serverbench import REPO_ROOT
from serverbench.cell import applog, servers
from serverbench.cell.database import DATABASE_VARIABLE, Database, DatabaseError
from serverbench.cell.database import version as database_version
from serverbench.cell.errors import CellFailed, CellSkipped
from serverbench.host import appsite, containers, engine, images, sysctls
from serverbench.host.cgroups import Isolation, raise_nofile
from serverbench.host.containers import DockerIsolation
from serverbench.host.netns import Network, NetworkError
from serverbench.host.releases import not_installed_reason, release_env
from serverbench.host.runenv import SetupFailed, readable_app, resolve_program, run_setup, version_of
from serverbench.plan import apps
from serverbench.plan.catalogue import ServerEntry, server_entry
from serverbench.plan.config import expected_answer, placeholders
from serverbench.plan.shapes import Profile, Target
from serverbench.record.sections import (
    DatabaseSection,
    Image,
    IsolationSection,
    Limits,
    NetworkSection,
    ServerSection,
    TimeWait,
)

# An app's setup makes fixtures (10,000 rows in a fraction of a second here); a minute is a hang.
APP_SETUP_TIMEOUT = 60


def no_wrapper(member: int) -> list[str]:
    return []


def server_values(profile: Profile, host: str, port: int, rundir: Path, app: dict) -> dict:
    """The values of a server command's placeholders (config.SERVER_PLACEHOLDERS), ``app``
    the app's placeholders for the server's language (plan.apps.app_values)."""
    return {
        **app,
        "host": host,
        "port": port,
        "workers": profile.workers,
        "workers_min": profile.workers_min,
        "worker_idle_timeout": profile.worker_idle_timeout,
        "threads": profile.threads,
        "backlog": profile.backlog,
        "apps": str(rundir / "apps"),
        "rundir": str(rundir),
        "root": str(REPO_ROOT),
        "venv": sys.prefix,
        "user": pwd.getpwuid(os.getuid()).pw_name,
    }


def render(config: dict, template, values: dict | None = None) -> list[str]:
    """An argv from a template, with the config's program paths (``programs``) applied."""
    if not template:
        return []
    rendered = servers.render_argv(template, values) if values else [str(a) for a in template]
    return resolve_program(config, rendered)


def server_env(spec: ServerEntry, values: dict) -> dict[str, str]:
    """The server's own environment variables (``env`` in its catalogue entry), rendered."""
    return dict(zip(spec.env, servers.render_argv(spec.env.values(), values), strict=True))


def templates_text(spec: ServerEntry) -> str:
    """The server's templates' text (its placeholders, whether it takes a backlog)."""
    return " ".join((REPO_ROOT / path).read_text() for path in spec.files.values())


def placeholders_used(spec: ServerEntry, templates: str | None = None) -> set[str]:
    """Every placeholder a server's command, environment, backend and templates name
    (``templates``: their text, where the caller has read it)."""
    if templates is None:
        templates = templates_text(spec)
    return set(placeholders(spec.argv_templates)) | set(re.findall(r"{{\s*(\w+)\s*}}", templates))


@dataclass
class Launched:
    """What launching the server found out: the record's sections that are the launch's own."""

    server: ServerSection = field(default_factory=ServerSection)
    time_wait: TimeWait | None = None
    network: NetworkSection | None = None
    limits: Limits | None = None
    isolation: IsolationSection | None = None
    image: Image | None = None
    database: DatabaseSection | None = None


class Launch:
    def __init__(self, config: dict, target: Target, profile: Profile, rundir: Path, log_path, env):
        self.config, self.target, self.profile = config, target, profile
        self.found = Launched()
        self.spec = server_entry(config, target.server)
        self.rundir, self.log_path, self.env = rundir, Path(log_path), env
        self.network: Network | None = None
        self.isolation: Isolation | None = None
        self.server: servers.ServerGroup | None = None
        self.database: Database | None = None
        self.image: str | None = None
        self.values: dict = {}
        self.argv: list[str] = []
        # The prefix each server process starts under (the work lens: valgrind, perf trace), by
        # its place among them (a backend 0, its front 1): each perf writes a file of its own.
        self.wrapper: Callable[[int], list[str]] = no_wrapper

    @property
    def program_env(self) -> dict:
        """The server's own environment: a release runs from its prefix, its programs first on
        PATH (the load tools and probes keep the harness's). Read from ``env`` each time: docker
        mode sets the engine's DOCKER_HOST in it once the image is built."""
        return release_env(self.spec.release, self.env) if self.spec.release else self.env

    @property
    def in_docker(self) -> bool:
        return self.profile.isolation == "docker"

    @property
    def host(self) -> str:
        return self.values["host"]

    @property
    def port(self) -> int:
        return self.values["port"]

    @property
    def expected_answer(self) -> dict:
        return self.expected_answer_of(self.target.workload)

    def expected_answer_of(self, workload_name: str) -> dict:
        """A correct answer to a workload of the app this server hosts."""
        workload = apps.workloads(self.config, self.target.profile)[workload_name]
        return expected_answer(self.spec.expect, workload, workload_name)

    def prepare(self) -> None:
        """Network, placeholders, argv, templates, limits; the image in docker mode."""
        found = self.found
        missing = not_installed_reason(self.spec.release) if self.spec.release else None
        if missing:
            raise CellSkipped(missing)
        app_name, app = apps.chosen(self.config, self.target.profile)
        language = self.spec.language
        if apps.hosts_apps(self.config, language) and language not in app:
            raise CellSkipped(f"the app {app_name!r} has no {language} part for {self.target.server} to host")
        if not self.spec.answers(self.target.workload):
            raise CellSkipped(
                f"{self.target.server} answers only {', '.join(self.spec.workloads)}, "
                f"not the {self.target.workload} workload"
            )
        found.time_wait = TimeWait.from_dict(sysctls.drain_time_wait(self.profile.time_wait_max))
        try:
            self.network = Network(self.profile.network).setup()
        except NetworkError as exc:
            raise CellFailed(f"network setup failed: {exc}") from None
        found.network = NetworkSection.from_dict(self.network.describe())
        host = self.network.server_address
        port = servers.free_port(host if self.network.namespace is None else "127.0.0.1")
        if language in app:  # code from outside the repository, copied where every server can read it
            app = {**app, language: readable_app(self.rundir, app[language], language)}
            self._with_requirements(app_name, app, language)
        hosted = apps.app_values(self.config, app, language, str(self.rundir / "apps"))
        lacking = apps.missing_values(hosted, self._placeholders_used())
        if lacking:
            raise CellSkipped(f"the app {app_name!r} gives no {', '.join(lacking)} for {self.target.server} to host it")
        self.values = server_values(self.profile, host, port, self.rundir, hosted)
        self._start_database()
        self._set_up_app(app_name, app)
        if self.in_docker:
            self.values["venv"] = containers.IMAGE_VENV
        self.argv = render(self.config, self.spec.command, self.values)
        found.server.argv = self.argv
        found.server.files = servers.render_files(self.spec.files, self._template_values(), self.rundir)
        found.server.host, found.server.port = host, port
        found.limits = self._limits()
        if self.in_docker:
            self.image = self._docker_image()
        elif shutil.which(self.argv[0], path=self.program_env["PATH"]) is None:
            raise CellSkipped(f"server program {self.argv[0]!r} not found on PATH")
        self._probe_versions()

    def _with_requirements(self, app_name: str, app: dict, language: str) -> None:
        """The app's own requirements in the server's language, installed (rule app_site) or the
        cell skipped with why; pip's served through the entry module that puts them on the path."""
        missing = appsite.not_installed_reason(self.config, app_name, language)
        if missing:
            raise CellSkipped(missing)
        if app[language].get("requirements") and apps.installer(self.config, language) == apps.PIP:
            app[language] = appsite.entry_part(self.config, app_name, language, app[language], self.rundir)

    def use_command(self, template: list[str], values: dict) -> None:
        """Start the server with another command than the catalogue's (after ``prepare``): the
        advise lens's deployed file as a user starts it (``gunicorn --config FILE``), its
        placeholders the launch's and ``values``. A server with a backend or in a container
        runs only its catalogue command."""
        if self.in_docker or self.spec.backend:
            raise CellSkipped("a deployed file runs on the host, for a server of one command")
        self.argv = render(self.config, template, {**self.values, **values})
        self.found.server.argv = self.argv
        if shutil.which(self.argv[0], path=self.program_env["PATH"]) is None:
            raise CellSkipped(f"server program {self.argv[0]!r} not found on PATH")

    def _template_values(self) -> dict:
        """The templates' variables: the entry's own (``template_vars``), the placeholders, and a
        front's settings as ``front``."""
        fronted = self.spec.fronted
        values = {**self.spec.template_vars, **self.values}
        return {**values, "front": dataclasses.asdict(fronted)} if fronted else values

    def _start_database(self) -> None:
        """The app's database, where it uses one (``database: true``): the profile's engine,
        started on the CPUs the profile gives it (the server's or the client's)."""
        engine = apps.database_engine(self.config, self.target.profile)
        if engine is None:
            return
        placement = self.profile.database.get("cpus", "server")
        cpus = list(self.profile.server_cpus if placement == "server" else self.profile.client_cpus)
        spec = (self.config.get("databases") or {}).get(engine, {})
        app_name = apps.app_name(self.config, self.target.profile)
        template = Path(apps.database_template(self.config, engine, app_name)) if engine != "sqlite" else None
        self.database = Database(engine, spec, template, self.rundir, cpus)
        self.found.database = DatabaseSection(
            engine=engine, version=database_version(spec) if spec else None, placement=placement, cpus=cpus
        )
        try:
            self.database.start(self.log_path)
        except DatabaseError as exc:
            raise CellFailed(f"the app's database did not start: {exc}") from None
        self.found.database.ready_s = round(self.database.started_s, 4) if self.database.started_s else None
        self.found.database.storage = self.database.storage
        self.values["database"] = str(self.database.descriptor_path)

    def _set_up_app(self, app_name: str, app: dict) -> None:
        """The app's own ``setup`` (its database's rows), run in the run directory before the
        server starts; its output goes to the server's log. A setup that fails fails the cell."""
        if "setup" not in app:
            return
        if self.database is not None and self.database.made_by_template:
            with self.log_path.open("ab") as log:
                log.write(b"serverbench: the app's setup ran in its database's template (rule database_template)\n")
            return
        values = {key: self.values.get(key) for key in ("apps", "rundir", "database")}
        argv = render(self.config, app["setup"], values)
        try:
            run_setup(argv, self.log_path, cwd=self.rundir, env=self.env, timeout=APP_SETUP_TIMEOUT)
        except SetupFailed as exc:
            raise CellFailed(f"the app {app_name!r}'s {exc}") from None

    @cached_property
    def _templates(self) -> str:
        """The server's templates' text, read once (its placeholders, whether it takes a backlog)."""
        return templates_text(self.spec)

    def _placeholders_used(self) -> set[str]:
        return placeholders_used(self.spec, self._templates)

    def _limits(self) -> Limits:
        somaxconn = sysctls.sysctl_int("net.core.somaxconn")
        # Servers that never get {backlog} choose their own: unknown until read from the socket.
        takes_backlog = "{backlog}" in " ".join(map(str, self.spec.command)) or "backlog" in self._templates
        backlog = self.profile.backlog if takes_backlog else None
        effective = min(backlog, somaxconn) if backlog and somaxconn else backlog
        return Limits(backlog=backlog, somaxconn=somaxconn, effective_backlog=effective, nofile=raise_nofile())

    def _read_backlog(self) -> None:
        """The backlog the server really listens with (what the backlog_small flag judges)."""
        limits = self.found.limits
        limits.listen_backlog = sysctls.listen_backlog(self.port, self.network.wrap, self.env)
        if limits.listen_backlog is not None:
            limits.effective_backlog = limits.listen_backlog

    def _probe_versions(self) -> None:
        """Versions are asked where the server runs: in docker mode, in its image."""

        def inside(command):
            return containers.probe_argv(self.image, command) if self.in_docker and command else command

        language = self.config["languages"][self.spec.language]
        interpreter = self.spec.interpreter or language.get("version")
        self.found.server.version = version_of(inside(render(self.config, self.spec.version)), self.program_env)
        self.found.server.interpreter = version_of(inside(render(self.config, interpreter)), self.program_env)

    def isolate(self) -> None:
        limits = {
            "cpus": list(self.profile.server_cpus),
            "memory_limit": self.profile.memory_limit,
            "cpu_quota": self.spec.cpu_quota,
            "label": f"serverbench-{self.target.server}",
        }
        if self.in_docker:
            if self.spec.backend:
                raise CellSkipped("docker isolation runs one server command; servers with a backend are not supported")
            container = f"serverbench-{uuid.uuid4().hex[:12]}"
            self.isolation = DockerIsolation(**limits, container=container, docker_env=self.env).setup()
        else:
            self.isolation = Isolation(**limits).setup()
        self._describe_isolation()

    def _describe_isolation(self) -> None:
        described = {
            **self.isolation.describe(),
            "server_cpus": self.profile.server_cpus,
            "client_cpus": self.profile.client_cpus,
        }
        self.found.isolation = IsolationSection.from_dict(described)

    def start(self) -> None:
        """Start the backend (if any), then the server; configure it by API where it has one."""
        env = {**self.program_env, **server_env(self.spec, self.values)}
        if self.database is not None:  # where the server passes its environment on to the app
            env[DATABASE_VARIABLE] = str(self.database.descriptor_path)
        members = []
        if self.spec.backend:
            backend_argv = render(self.config, self.spec.backend, self.values)
            self.found.server.backend_argv = backend_argv
            members.append(self._process(backend_argv, env, 0))
        members.append(self._process(self._front_argv(), env, len(members)))
        self.server = servers.ServerGroup(members)
        try:
            for member in members:
                member.start()
                if member is not members[-1]:
                    socket_path = servers.render_argv([self.spec.backend_socket], self.values)[0]
                    servers.wait_for_socket(socket_path, members, self.profile.ready_timeout)
            if self.in_docker:
                self._attach_container()
            if self.spec.control is not None:
                self._configure_by_api(members)
        except servers.ServerError as exc:
            raise CellFailed(f"server did not start: {exc}{self.log_note()}") from None

    def _process(self, argv: list[str], env: dict, member: int) -> servers.ServerProcess:
        return servers.ServerProcess(
            self.network.wrap([*self.wrapper(member), *argv]), self.log_path, self.isolation, REPO_ROOT, env
        )

    def _front_argv(self) -> list[str]:
        if not self.in_docker:
            return self.argv
        argv = containers.run_argv(
            self.image,
            self.argv,
            name=self.isolation.container,
            cpus=self.isolation.cpus,
            cpu_quota=self.isolation.cpu_quota,
            memory_limit=self.isolation.memory_limit,
            nofile=self.isolation.nofile,
            mounts=[self.rundir],
            read_only=[REPO_ROOT],  # {root}
            env=server_env(self.spec, self.values),
            workdir=self.rundir,
        )
        self.found.server.docker_argv = argv
        return argv

    def wait_ready(self) -> None:
        try:
            ready_s = self.server.wait_ready(self.host, self.port, self.profile.ready_timeout)
        except servers.ServerError as exc:
            raise CellFailed(f"server did not start: {exc}{self.log_note()}") from None
        self.found.server.ready_s = round(ready_s, 4)
        self._read_backlog()
        pattern = self.spec.interpreter_from_log
        if pattern:
            found = re.search(pattern, self.log_path.read_text(errors="replace"), re.M)
            self.found.server.interpreter = found.group(1) if found else None
        self.found.server.pid = self.server.pid

    def _docker_image(self) -> str:
        """The language's image (made on first use); docker calls go to the engine that answers."""
        try:
            self.env = engine.connect(self.config, self.env)
        except engine.EngineError as exc:
            raise CellSkipped(f"docker isolation: {exc}") from None
        try:
            image = images.build_servers(self.config, self.spec.language, self.env)
        except images.ImageError as exc:
            raise CellFailed(f"docker image: {exc}") from None
        self.found.image = Image.from_dict(images.describe(image))
        return image.tag

    def _attach_container(self) -> None:
        deadline = time.monotonic() + self.profile.ready_timeout
        while not self.isolation.attach():
            self.check_alive("container start")
            if time.monotonic() > deadline:
                raise servers.ServerError(f"container {self.isolation.container} did not start in time")
            time.sleep(0.1)
        self._describe_isolation()

    def _configure_by_api(self, members) -> None:
        """PUT the rendered config to the server's control socket (NGINX Unit)."""
        control = self.spec.control
        socket_path = servers.render_argv([control["socket"]], self.values)[0]
        servers.wait_for_socket(socket_path, members, self.profile.ready_timeout)
        body = Path(self.found.server.files[control["file"]]).read_bytes()
        try:
            status, answer = servers.put_control(socket_path, control["path"], body)
        except OSError as exc:
            raise servers.ServerError(f"control API on {socket_path} failed: {exc}") from None
        self.found.server.control = {"status": status, "answer": answer.strip()[:2000]}
        if status != 200:
            raise servers.ServerError(f"control API refused the config ({status}): {answer.strip()[:500]}")

    def log_note(self) -> str:
        """The last error in the server's log (an app that did not import, a .psgi that
        died), kept in the record and said at the end of a failure's reason ('' if none)."""
        self.found.server.log_error = applog.read_last_error(self.log_path)
        return applog.in_words(self.found.server.log_error)

    def oom_note(self) -> str:
        kills = self.isolation.oom_kills() if self.isolation else None
        return f" (cgroup OOM kills: {kills})" if kills else ""

    def check_alive(self, during: str, raw_text: str = "") -> None:
        """CellFailed if the server has exited (with what the tool printed so far)."""
        code = self.server.exit_code()
        if code is not None:
            raise CellFailed(
                f"server exited with code {code} during {during}{self.oom_note()}{self.log_note()}", raw_text
            )

    def stop(self) -> bool:
        """Stop the server tree, release its isolation, database and network; True if a
        server was running. Each is released even where an earlier one raised (a harness
        bug): no database or namespace outlives the job."""
        stopped = self.server is not None
        with contextlib.ExitStack() as release:  # run last to first, each whatever the others raised
            release.callback(self._release_network)
            release.callback(self._stop_database)
            release.callback(self._release_isolation)
            if stopped:
                self._stop_server()
        return stopped

    def _stop_server(self) -> None:
        # Read before the stop too: a container's cgroup goes with the container
        # (the isolation keeps the most it read, the monitor's samples included).
        if self.isolation is not None:
            self.isolation.oom_kills()
        try:
            self.found.server.stop = self.server.stop(self.profile.stop_grace)
        except BaseException:
            self.server.kill()
            self.server = None
            raise
        if self.isolation is not None:
            self.found.server.oom_kills = self.isolation.oom_kills()
        self.server = None

    def _release_isolation(self) -> None:
        if self.isolation is not None:
            self.isolation.cleanup()
            self.isolation = None

    def _release_network(self) -> None:
        if self.network is not None:
            self.network.cleanup()
            self.network = None

    def _stop_database(self) -> None:
        if self.database is not None:
            database, self.database = self.database, None
            stopped_as = database.stop()
            if self.found.database is not None:
                self.found.database.stop = stopped_as
