"""A catalogue server as the harness reads it: ``ServerEntry``, every key of
workflow/schemas/catalogue.schema.yaml declared once as a typed field (the schema
gives the defaults; a test holds the two together), so no job reads a raw dict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from serverbench.record.vocabulary import Outcome


class WorkStop(StrEnum):
    """How the work lens stops a server (``work_stop``)."""

    TOGETHER = "together"  # every process TERMed at once
    CHILDREN_FIRST = "children first"  # the top process frozen until the others have ended


@dataclass(frozen=True)
class SearchSpec:
    """The settings the ``advise`` profile searches (the schema's ``search``; plan.search)."""

    workers: tuple[int, int] | None = None  # lowest and highest workers; None: the start's only
    threads: tuple[int, int] | None = None
    start_workers: int | str = "2*cpus+1"  # the rule of thumb, a count or a formula of cpus
    start_threads: int | str = 1
    models: tuple[str, ...] = ()  # the same server in other worker models, searched with it

    @classmethod
    def from_spec(cls, spec: dict) -> SearchSpec:
        start = spec.get("start") or {}
        return cls(
            workers=tuple(spec["workers"]) if spec.get("workers") else None,
            threads=tuple(spec["threads"]) if spec.get("threads") else None,
            start_workers=start.get("workers", "2*cpus+1"),
            start_threads=start.get("threads", 1),
            models=tuple(spec.get("models") or ()),
        )


@dataclass(frozen=True)
class Deploy:
    """How a user deploys the server (the schema's ``deploy``): a template rendered to ``file``,
    started by ``run``."""

    template: str
    file: str
    run: tuple[str, ...]
    vars: dict[str, Any] = field(default_factory=dict)


class Counted(StrEnum):
    """What a worker's recycling limit counts (the schema's ``recycle.counts``)."""

    REQUESTS = "requests"
    CONNECTIONS = "connections"


@dataclass(frozen=True)
class Recycle:
    """How a server restarts a worker after a number of requests or connections (``recycle``)."""

    counts: Counted
    default: int | None  # the limit it applies when not asked; None: it never recycles by itself
    limit: tuple[str, ...]  # the argv that sets one ({max_requests}); empty where its templates do
    jitter: tuple[str, ...] | None = None  # the argv that spreads it over workers ({max_requests_jitter})
    # No worker younger than this is recycled, whatever it served (uWSGI's min-worker-lifetime), and
    # the argv that sets it ({min_worker_lifetime}); None: no floor declared.
    min_lifetime_default_s: float | None = None
    min_lifetime: tuple[str, ...] | None = None
    # The argv that restarts a worker whose resident memory passes N MB ({reload_on_rss_mb}; uWSGI's).
    rss: tuple[str, ...] | None = None
    in_templates: bool = False  # the limit is its templates' {{ max_requests }} (Unit's limits.requests)

    @property
    def said(self) -> str:
        """In words, for `serverbench list servers`."""
        floor = f", no worker younger than {self.min_lifetime_default_s:g} s" if self.min_lifetime_default_s else ""
        how = " ".join(self.limit).replace("{max_requests}", "N")
        if self.in_templates:
            how = "its templates' max_requests"
        if self.default is None:
            return f"recycles only when asked ({how}{floor})"
        return f"recycles a worker every {self.default} {self.counts.value} by default{floor}"


@dataclass(frozen=True)
class Stop:
    """How the server is stopped (the schema's ``stop``): the signal of a graceful stop (None:
    it has none) and of a fast one, the control API requests that stop it accepting first, and
    the setting bounding a graceful stop with its default (None: it waits for every request)."""

    graceful: str | None
    fast: str
    control: tuple[dict, ...] = ()  # each {method, path}, placeholders as in its command
    timeout_setting: str | None = None
    timeout_default_s: float | None = None
    note: str | None = None
    reuse_port: tuple[str, ...] = ()  # the argv fragment setting SO_REUSEPORT (none: it has none)

    @classmethod
    def from_spec(cls, spec: dict) -> Stop:
        timeout = spec.get("timeout") or {}
        return cls(
            None if spec["graceful"] == "none" else spec["graceful"],
            spec["fast"],
            tuple(spec.get("control") or ()),
            timeout.get("setting"),
            timeout.get("default_s"),
            spec.get("note"),
            tuple(spec.get("reuse_port") or ()),
        )


@dataclass(frozen=True)
class RequestTimeout:
    """The server's own bound on one request's handling (the schema's ``request_timeout``): the argv
    that sets it (``{request_timeout_s}``; empty where its templates take it or nothing sets it), its
    default (None: none), whether it bounds a request rather than a silent worker, what it does."""

    default_s: float | None
    per_request: bool
    note: str
    setting: tuple[str, ...] = ()
    in_templates: bool = False

    @property
    def settable(self) -> bool:
        return bool(self.setting) or self.in_templates


@dataclass(frozen=True)
class KeepAlive:
    """How long the server keeps an idle kept-alive connection (the schema's ``keepalive``): its
    default as its command leaves it, the setting a user changes, and the argv appended to its
    command that sets it ({keepalive_s}; None where only its configuration file or API does)."""

    default_s: float
    setting: str
    argv: tuple[str, ...] | None = None
    note: str | None = None

    def said(self) -> str:
        """In words: "2 s by default (--keep-alive)"."""
        return f"{self.default_s:g} s by default ({self.setting})"


@dataclass(frozen=True)
class Behind:
    """How a server runs behind a front (the schema's ``behind``)."""

    protocol: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class Fronted:
    """A deployment of ``server`` behind ``front`` (the schema's ``fronted``, written by
    plan.fronts.expand_fronts)."""

    server: str
    front: str
    protocol: str
    upstream_keepalive: bool
    workers: int = 1
    timeouts: dict[str, float] = field(default_factory=dict)
    version: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Release:
    """This entry is server ``of`` at one release of its package (the schema's ``release``,
    written by plan.releases.expand_releases): installed by pip into ``prefix``."""

    of: str
    package: str
    version: str
    requirement: str
    distribution: str
    prefix: str
    find_links: str | None = None
    index_url: str | None = None
    baseline: str | None = None  # the package's declared baseline version, where it names one


@dataclass(frozen=True)
class ServerEntry:
    name: str
    language: str
    command: tuple[str, ...]
    description: str | None = None
    alias_of: str | None = None  # the A/A control's original
    variant_of: str | None = None  # a planted or real variant's original
    planted: Outcome | None = None  # a positive control: how it must come out against its original on speed
    family: str | None = None  # one design across languages (comparisons.families)
    product: str | None = None  # one program serving several languages (comparisons.same_server)
    version: tuple[str, ...] | None = None  # an argv that prints the server's version
    interpreter: tuple[str, ...] | None = None  # an argv that prints the interpreter it runs
    interpreter_from_log: str | None = None  # a pattern whose group 1 in the server's log names it
    files: dict[str, str] = field(default_factory=dict)  # Jinja2 templates rendered into the run directory
    template_vars: dict[str, Any] = field(default_factory=dict)  # further variables of those templates
    backend: tuple[str, ...] | None = None  # an app server started first, behind this front
    backend_socket: str | None = None  # where the backend accepts
    control: dict[str, Any] | None = None  # an HTTP API on a Unix socket (Unit)
    env: dict[str, str] = field(default_factory=dict)
    workloads: tuple[str, ...] | None = None  # the only workloads it answers (None: all)
    expect: dict[str, Any] = field(default_factory=dict)  # its own hello-world answer
    reload: dict[str, Any] | None = None  # how it reloads: a signal, a touched file, its control API
    stop: Stop | None = None  # how it stops: its graceful and fast signals, the graceful stop's bound
    cpu_quota: float | None = None
    keepalive_timeout_s: float | None = None
    work_spread: float | None = None
    ignores_hash_seed_env: bool = False
    work_stop: WorkStop = WorkStop.TOGETHER
    work_realtime: bool = False
    work_pairs: int = 1
    search: SearchSpec | None = None  # what the advise profile searches; None: its start only
    deploy: Deploy | None = None  # the configuration a user deploys it with
    recycle: Recycle | None = None  # how it restarts a worker after a number of requests or connections
    behind: Behind | None = None  # how it runs behind a front (config `fronts`)
    timeouts: dict[str, float] = field(default_factory=dict)  # what it applies to a client, seconds by name
    request_timeout: RequestTimeout | None = None  # its own bound on one request's handling
    keepalive: KeepAlive | None = None  # its idle keep-alive timeout and how it is set (the idle-pool lens)
    fronted: Fronted | None = None  # this deployment is a server behind a front
    release: Release | None = None  # this entry is a server at one release of its package

    @classmethod
    def from_spec(cls, name: str, spec: dict) -> ServerEntry:
        """An entry of a validated config's catalogue (argv lists become tuples)."""
        known = {f.name for f in fields(cls)} - {"name"}
        values = {key: value for key, value in spec.items() if key in known and value is not None}
        for key in ("command", "version", "backend", "workloads"):
            if key in values:
                values[key] = tuple(values[key])
        if isinstance(values.get("interpreter"), list):
            values["interpreter"] = tuple(values["interpreter"])
        if "search" in values:
            values["search"] = SearchSpec.from_spec(values["search"])
        if "deploy" in values:
            values["deploy"] = Deploy(**{**values["deploy"], "run": tuple(values["deploy"]["run"])})
        if "recycle" in values:
            recycle = values["recycle"]
            jitter = tuple(recycle["jitter"]) if recycle.get("jitter") else None
            floor = tuple(recycle["min_lifetime"]) if recycle.get("min_lifetime") else None
            rss = tuple(recycle["rss"]) if recycle.get("rss") else None
            values["recycle"] = Recycle(
                Counted(recycle["counts"]),
                recycle["default"],
                tuple(recycle.get("limit") or ()),
                jitter,
                recycle.get("min_lifetime_default_s"),
                floor,
                rss,
                bool(recycle.get("in_templates")),
            )
        if "stop" in values:
            values["stop"] = Stop.from_spec(values["stop"])
        if "request_timeout" in values:
            bound = dict(values["request_timeout"])
            values["request_timeout"] = RequestTimeout(**{**bound, "setting": tuple(bound.get("setting") or ())})
        if "keepalive" in values:
            keepalive = values["keepalive"]
            argv = tuple(keepalive["argv"]) if keepalive.get("argv") else None
            values["keepalive"] = KeepAlive(keepalive["default_s"], keepalive["setting"], argv, keepalive.get("note"))
        if "behind" in values:
            values["behind"] = Behind(values["behind"]["protocol"], tuple(values["behind"]["command"]))
        if "fronted" in values:
            fronted = dict(values["fronted"])
            if fronted.get("version"):
                fronted["version"] = tuple(fronted["version"])
            values["fronted"] = Fronted(**fronted)
        if "release" in values:
            values["release"] = Release(**values["release"])
        if "work_stop" in values:
            values["work_stop"] = WorkStop(values["work_stop"])
        if "planted" in values:
            values["planted"] = Outcome(values["planted"])
        return cls(name=name, **values)

    @property
    def argv_templates(self) -> list[str]:
        """Every argv part with placeholders: its command, environment values and backend."""
        return [*self.command, *self.env.values(), *(self.backend or ())]

    def answers(self, workload: str) -> bool:
        """Whether it runs this workload of the apps (baselines answer hello world only)."""
        return self.workloads is None or workload in self.workloads


def server_entry(config: dict, name: str) -> ServerEntry:
    """The typed entry of catalogue server ``name``."""
    return ServerEntry.from_spec(name, config["catalogue"][name])
