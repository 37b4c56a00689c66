"""Configuration: schema validation (the schema's defaults applied), semantic checks,
the profile a cell runs with, and the config's digest.

Every error names the key path it concerns, so a user can fix a config
without reading a traceback.
"""

from __future__ import annotations

import os
import re
import resource
import string
from pathlib import Path

import yaml

from serverbench import REPO_ROOT
from serverbench.plan import apps, scaling
from serverbench.plan.fronts import expand_fronts, is_fronted
from serverbench.plan.releases import ReleaseError, expand_releases
from serverbench.plan.schema import (  # noqa: F401 (ConfigError, load_schema: this module's names too)
    ConfigError,
    check_schema,
    declared_settings,
    lens_settings_schemas,
    load_schema,
)
from serverbench.plan.shapes import DEFAULT_WORKLOAD, Profile
from serverbench.plan.tools import is_open_loop, takes_whole_seconds

DEFAULT_CATALOGUE = "catalogue.yaml"

SERVER_PLACEHOLDERS = frozenset(
    {
        "host",
        "port",
        "workers",
        "workers_min",
        "worker_idle_timeout",
        "threads",
        "backlog",
        "apps",
        "rundir",
        "root",
        "venv",
        "user",
    }
    | apps.APP_PLACEHOLDERS
)
# A server's recycling argvs (catalogue `recycle`): the limit, its spread over workers, its floor,
# a worker's memory limit.
# The argv that sets a server's idle keep-alive timeout (its catalogue entry's `keepalive`).
KEEPALIVE_PLACEHOLDERS = frozenset({"keepalive_s"})
RECYCLE_PLACEHOLDERS = {
    "limit": frozenset({"max_requests"}),
    "jitter": frozenset({"max_requests_jitter"}),
    "min_lifetime": frozenset({"min_worker_lifetime"}),
    "rss": frozenset({"reload_on_rss_mb"}),
}
TOOL_PLACEHOLDERS = frozenset(
    {
        "url",
        "concurrency",
        "duration",
        "requests",
        "timeout",
        "client_threads",
        "wrk_report",
        "rate",
    }
)
# Top-level keys that, when set, replace the same key of every selected profile.
PROFILE_OVERRIDES = (
    "servers",
    "tools",
    "workloads",
    "concurrency",
    "repeats",
    "duration",
    "requests",
    "rate",
    "scale_down",
    "network",
    "isolation",
    "work",
    "server_cpus",
    "memory_limit",
)
# Top-level keys that, when set, replace the same key of every lens's settings that take it
# (their schema declares the key, at their top or in an object of them: recycle's `capacity`).
LENS_OVERRIDES = ("objective_p99_ms", "memory_budget_mb", "cpu_limit")

FD_RESERVE = 64

DEFAULT_EXPECT = {"status": 200, "body": "Hello World!"}


def read_catalogue(config: dict) -> None:
    """The servers of ``catalogue_file`` (catalogue.yaml) into ``config["catalogue"]``, the
    config's own entries added or put in their place (a config of one's own adds a server)."""
    name = config.get("catalogue_file", DEFAULT_CATALOGUE)
    path = Path(name) if Path(name).is_absolute() else REPO_ROOT / name
    try:
        found = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ConfigError("catalogue_file", f"cannot read {path}: {exc.strerror}") from None
    if not isinstance(found, dict):
        raise ConfigError("catalogue_file", f"{path} holds no mapping of servers")
    config["catalogue"] = {**found, **(config.get("catalogue") or {})}


def placeholders(argv) -> list[str]:
    names = []
    for item in argv:
        for _, name, _, _ in string.Formatter().parse(str(item)):
            if name is not None:
                names.append(name)
    return names


def available_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


APP_SETUP_PLACEHOLDERS = frozenset({"apps", "rundir", "database"})


def _check_argv(path: str, argv, allowed: frozenset) -> None:
    for index, item in enumerate(argv):
        try:
            names = placeholders([item])
        except ValueError as exc:
            raise ConfigError(f"{path}[{index}]", f"malformed placeholder in {item!r}: {exc}") from None
        for name in names:
            if name not in allowed:
                raise ConfigError(
                    f"{path}[{index}]",
                    f"unknown placeholder {{{name}}}; known: {', '.join(sorted(allowed))}",
                )


def selected_profiles(config: dict) -> list[str]:
    chosen = config["profile"]
    return [chosen] if isinstance(chosen, str) else list(chosen)


def requested_profile(config: dict, name: str) -> dict:
    """The profile as written, with the top-level overrides applied."""
    profile = dict(config["profiles"][name])
    for key in PROFILE_OVERRIDES:
        if config.get(key) is not None:
            profile[key] = config[key]
    if config.get("repeats") is not None:
        # Rounds asked for by number are exactly that many: none added for precision.
        profile.update(precision=None, min_repeats=None, max_repeats=None, measuring_budget=None)
    overrides = {key: config[key] for key in LENS_OVERRIDES if config.get(key) is not None}
    if overrides:
        for key, settings_schema in lens_settings_schemas(_lens_packages(config)).items():
            if profile.get(key):
                profile[key] = _overridden(profile[key], settings_schema, overrides)
    if profile["servers"] == "all":  # the catalogue as written: deployments behind a front and releases are named
        made = [name for name, entry in config["catalogue"].items() if is_fronted(entry) or "release" in entry]
        profile["servers"] = [name for name in config["catalogue"] if name not in made]
    if config.get("workloads") is None:
        _own_workloads(config, name, profile)
    return profile


def _lens_packages(config: dict) -> tuple:
    """The lenses a config adds (its ``lenses``), as the schema reads them."""
    added = config.get("lenses")
    return tuple(added) if isinstance(added, list) else ()


def _overridden(settings: dict, schema: dict, overrides: dict) -> dict:
    """``settings`` with each override put where ``schema`` (settings of a lens) declares its key."""
    objects = [schema, *schema.get("oneOf", []), *schema.get("anyOf", [])]
    declared = {key: sub for alternative in objects for key, sub in alternative.get("properties", {}).items()}
    out = {**settings, **{key: value for key, value in overrides.items() if key in declared}}
    for key, sub in declared.items():
        if isinstance(out.get(key), dict):
            out[key] = _overridden(out[key], sub, overrides)
    return out


def _own_workloads(config: dict, name: str, profile: dict) -> None:
    """A profile written for the hello app measures an app that brings its own ``workloads`` on
    them (in place): those of the profile's workloads the app answers, else every workload of
    the app; a lens's own workload the app lacks (recycle's ``leak``) gives way to the profile's
    first. A ``workloads`` given at the top is the user's own choice, checked as written."""
    # An app the config lacks is named by the checks (validate), not here.
    own = (config["apps"].get(apps.app_name(config, name)) or {}).get("workloads")
    if not own:
        return
    answered = [workload for workload in profile.get("workloads") or [] if workload in own]
    profile["workloads"] = answered or list(own)
    recycle = profile.get("recycle")
    if recycle and recycle.get("workload") is not None and recycle["workload"] not in own:
        profile["recycle"] = {key: value for key, value in recycle.items() if key != "workload"}


def effective_profile(config: dict, name: str) -> Profile:
    """The profile scaled to this host: CPU lists, worker counts, memory in bytes."""
    resolved = scaling.resolve(requested_profile(config, name), sorted(available_cpus()), scaling.host_memory())
    return Profile.from_dict(name, resolved, declared_settings(_lens_packages(config)))


def _number(value):
    """``--config`` hands numbers inside lists over as strings; read them back."""
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]*\.[0-9]+", value.strip()):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def normalise_overrides(config: dict) -> dict:
    """Numbers given on the command line as text become numbers (in place)."""
    numbers = ("concurrency", "repeats", "duration", "requests", "rate", "objective_p99_ms", "memory_budget_mb")
    for key in (*numbers, "cpu_limit"):
        value = config.get(key)
        if isinstance(value, list):
            config[key] = [_number(v) for v in value]
        elif value is not None:
            config[key] = _number(value)
    for key in ("scale_down", "work"):
        if config.get(key) is not None and not isinstance(config[key], list):
            config[key] = _number(config[key])
    return config


def expand_aliases(config: dict) -> None:
    """Fill each catalogue alias (``alias_of``: the same server under a second name) and
    variant (``variant_of``: a version or configuration of another) from its original,
    without the product and family that would pair it with other servers; the
    entry's own keys override the original's."""
    catalogue = config.get("catalogue") or {}
    for name, entry in catalogue.items():
        if not isinstance(entry, dict):
            continue
        for key in ("alias_of", "variant_of"):
            original = entry.get(key)
            if original is None:
                continue
            if original not in catalogue or {"alias_of", "variant_of"} & set(catalogue[original]):
                raise ConfigError(f"catalogue.{name}.{key}", f"{original!r} is not a catalogue server (nor a copy)")
            # Its own way of running behind a front, if any: the original's would drop what the copy changes.
            copied = {k: v for k, v in catalogue[original].items() if k not in ("product", "family", "behind")}
            catalogue[name] = {**copied, **entry}
            break


def _workload_sets(config: dict) -> dict[str, dict]:
    """Every set of workloads, by its key path: the hello app's and each app's own."""
    own = {f"apps.{name}.workloads": app["workloads"] for name, app in config["apps"].items() if "workloads" in app}
    return {"app_workloads": config["app_workloads"], **own}


def _check_mixes(config: dict) -> None:
    """A mix names workloads of its own set that are not mixes themselves."""
    for where, workloads in _workload_sets(config).items():
        for name, workload in workloads.items():
            for part in workload.get("mix", {}):
                if part not in workloads or "mix" in workloads[part]:
                    raise ConfigError(f"{where}.{name}.mix.{part}", f"not a workload of {where} with a path of its own")


def _check_patterns(config: dict) -> None:
    """Every workload's ``expect.matches`` is a regular expression Python compiles."""
    for where, workloads in _workload_sets(config).items():
        for name, workload in workloads.items():
            pattern = workload.get("expect", {}).get("matches")
            try:
                re.compile(pattern or "")
            except re.error as exc:
                raise ConfigError(f"{where}.{name}.expect.matches", f"not a regular expression: {exc}") from None


def _check_catalogue(config: dict) -> None:
    """Every server's argvs, backend, control file, templates and language; every front's."""
    for name, server in config["catalogue"].items():
        _check_argv(f"catalogue.{name}.command", server["command"], SERVER_PLACEHOLDERS)
        if "env" in server:
            _check_argv(f"catalogue.{name}.env", list(server["env"].values()), SERVER_PLACEHOLDERS)
        for key in ("backend", "interpreter"):
            if key in server:
                _check_argv(f"catalogue.{name}.{key}", server[key], SERVER_PLACEHOLDERS)
        if "behind" in server:
            _check_argv(f"catalogue.{name}.behind.command", server["behind"]["command"], SERVER_PLACEHOLDERS)
        if (server.get("keepalive") or {}).get("argv"):
            _check_argv(f"catalogue.{name}.keepalive.argv", server["keepalive"]["argv"], KEEPALIVE_PLACEHOLDERS)
        for key, allowed in RECYCLE_PLACEHOLDERS.items():
            if (server.get("recycle") or {}).get(key):
                _check_argv(f"catalogue.{name}.recycle.{key}", server["recycle"][key], allowed)
        if "backend" in server and "backend_socket" not in server:
            raise ConfigError(f"catalogue.{name}", "a server with a backend needs backend_socket")
        control = server.get("control")
        if control and control["file"] not in server.get("files", {}):
            raise ConfigError(f"catalogue.{name}.control.file", f"{control['file']!r} is not one of the server's files")
        for file_name, template in server.get("files", {}).items():
            if not (REPO_ROOT / template).is_file():
                raise ConfigError(f"catalogue.{name}.files.{file_name}", f"template {template!r} not found")
        if server["language"] not in config["languages"]:
            raise ConfigError(
                f"catalogue.{name}.language",
                f"unknown language {server['language']!r}; known: {', '.join(sorted(config['languages']))}",
            )
    for name, front in config["fronts"].items():
        _check_argv(f"fronts.{name}.command", front["command"], SERVER_PLACEHOLDERS)
        for protocol, template in front["protocols"].items():
            if not (REPO_ROOT / template).is_file():
                raise ConfigError(f"fronts.{name}.protocols.{protocol}", f"template {template!r} not found")


def _check_requirements(config: dict, name: str, app: dict) -> None:
    """An app part's ``requirements`` need their language's installer; pip's sources, pip."""
    for language in set(app) & set(config["languages"]):
        part, how = app[language], apps.installer(config, language)
        if part.get("requirements") and how is None:
            raise ConfigError(f"apps.{name}.{language}.requirements", f"{language} has no `requirements` installer")
        for key in ("find_links", "index_url"):
            if key in part and how != apps.PIP:
                raise ConfigError(f"apps.{name}.{language}.{key}", f"pip's option, and {language}'s installer is {how}")


def validate(config: dict) -> dict:
    """Check a config (after reading command-line numbers); raise ConfigError."""
    read_catalogue(config)
    normalise_overrides(config)
    expand_aliases(config)
    expand_fronts(config)
    check_schema(config)
    # After the check, from the checked entries: a server's own error is named at the server,
    # not at a release of it (a release adds only the `release` section this code writes).
    try:
        expand_releases(config)
    except ReleaseError as exc:
        raise ConfigError("releases", str(exc)) from None
    if config["app"] not in config["apps"]:
        raise ConfigError("app", f"{config['app']!r} is not one of apps: {', '.join(sorted(config['apps']))}")
    for name, profile in config["profiles"].items():
        for index, app in enumerate(profile.get("apps") or []):
            if app not in config["apps"]:
                known = ", ".join(sorted(config["apps"]))
                raise ConfigError(f"profiles.{name}.apps[{index}]", f"{app!r} is not one of apps: {known}")
        if profile.get("app") is not None and profile["app"] not in config["apps"]:
            raise ConfigError(f"profiles.{name}.app", f"{profile['app']!r} is not one of apps")
    apps.expand_app_profiles(config)
    for name, app in config["apps"].items():
        for language in set(app) - {"description", "workloads", "setup", "database"} - set(config["languages"]):
            raise ConfigError(f"apps.{name}.{language}", f"not a language of `languages`: {language!r}")
        if "setup" in app:
            _check_argv(f"apps.{name}.setup", app["setup"], APP_SETUP_PLACEHOLDERS)
            if "database" in placeholders(app["setup"]) and not app.get("database"):
                raise ConfigError(f"apps.{name}.setup", "names {database}, but the app has no `database: true`")
        _check_requirements(config, name, app)
    _check_patterns(config)
    _check_mixes(config)
    _check_catalogue(config)
    for name, tool in config["load_tools"].items():
        _check_argv(f"load_tools.{name}.command", tool["command"], TOOL_PLACEHOLDERS)
    for name, path in (config.get("programs") or {}).items():
        if path is not None and not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise ConfigError(f"programs.{name}", f"{path!r} is not an executable file")
    for profile_name in selected_profiles(config):
        if profile_name not in config["profiles"]:
            raise ConfigError(
                "profile", f"unknown profile {profile_name!r}; known: {', '.join(sorted(config['profiles']))}"
            )
        _check_profile(config, profile_name)
    return config


def _check_work(config: dict, requested: dict, where: str) -> None:
    """`work` as a list names workloads some app has (an app's profile counts those it has)."""
    if not isinstance(requested.get("work"), list):
        return
    known = {workload for workloads in _workload_sets(config).values() for workload in workloads}
    for index, item in enumerate(requested["work"]):
        if item not in known:
            raise ConfigError(f"{where}[{index}]", f"unknown workload {item!r}; known: {', '.join(sorted(known))}")


def _check_profile(config: dict, name: str) -> None:
    where = f"profiles.{name}"

    def origin(key):
        return key if config.get(key) is not None else f"{where}.{key}"

    requested = requested_profile(config, name)
    for key, known, kind in (
        ("servers", config["catalogue"], "server"),
        ("tools", config["load_tools"], "tool"),
        ("workloads", apps.workloads(config, name), "workload"),
    ):
        for index, item in enumerate(requested[key]):
            if item not in known:
                raise ConfigError(
                    f"{origin(key)}[{index}]", f"unknown {kind} {item!r}; known: {', '.join(sorted(known))}"
                )
    _check_work(config, requested, origin("work"))
    try:
        profile = effective_profile(config, name)
    except scaling.ScaleError as exc:
        raise ConfigError(f"{where}.{exc.key}", str(exc)) from None
    engine = profile.database.get("engine", "sqlite")
    if engine != "sqlite" and engine not in (config.get("databases") or {}):
        known = ", ".join(["sqlite", *sorted(config.get("databases") or {})])
        raise ConfigError(f"{where}.database.engine", f"unknown database {engine!r}; known: {known}")
    if profile.isolation == "docker" and profile.network == "netns":
        raise ConfigError(
            f"{where}.network", "netns is not available with isolation: docker (containers use the host network)"
        )
    if profile.precision:
        low, high = profile.min_repeats or profile.repeats, profile.max_repeats or profile.repeats
        if low < 2:
            raise ConfigError(f"{where}.min_repeats", "precision needs at least 2 repeats before it is judged")
        if high < low:
            raise ConfigError(f"{where}.max_repeats", f"{high} is fewer than min_repeats ({low})")
    for tool in profile.tools:
        spec = config["load_tools"][tool]
        # A fractional warm-up is interrupted at its time (measure.Measure.warm_up).
        if takes_whole_seconds(spec) and not float(profile.duration).is_integer():
            raise ConfigError(
                f"{origin('duration')}", f"{tool} takes whole seconds: {profile.duration} cannot be its -d"
            )
        if is_open_loop(spec) and not profile.rate:
            raise ConfigError(f"{where}.rate", f"tool {tool!r} offers a constant rate: the profile needs `rate`")
    if profile.open_loop:
        _check_open_loop(config, f"{where}.open_loop", profile)
    # Each connection is a file descriptor on both sides; keep room for the rest.
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    for index, concurrency in enumerate(profile.concurrency):
        if concurrency > nofile - FD_RESERVE:
            raise ConfigError(
                f"{origin('concurrency')}[{index}]",
                f"{concurrency} connections cannot fit the open-file limit {nofile} "
                f"(less {FD_RESERVE} kept for the process itself)",
            )


def _check_open_loop(config: dict, where: str, profile: Profile) -> None:
    spec = profile.open_loop
    tool = config["load_tools"].get(spec["tool"])
    if tool is None:
        known = ", ".join(sorted(config["load_tools"]))
        raise ConfigError(f"{where}.tool", f"unknown tool {spec['tool']!r}; known: {known}")
    if not is_open_loop(tool):
        raise ConfigError(f"{where}.tool", f"{spec['tool']!r} takes no {{rate}}: it cannot offer a constant rate")
    if spec["min_duration"] > spec["max_duration"]:
        raise ConfigError(f"{where}.min_duration", f"{spec['min_duration']} is above max_duration")
    if profile.precision:
        # A rate cell's rate comes from the capacity cells' planned repeats.
        raise ConfigError(f"{where}", "open_loop cannot be combined with precision-driven repeats")


def read(path: str | Path) -> dict:
    """A YAML config as written, its catalogue read in (``read_catalogue``), not validated."""
    config = yaml.safe_load(Path(path).read_text()) or {}
    read_catalogue(config)
    return config


def load(path: str | Path, overrides: dict | None = None) -> dict:
    """Read a YAML config, merge overrides (as ``--config`` does) and validate."""
    config = read(path)
    config.update(overrides or {})
    return validate(config)


def expected_answer(server_expect: dict, workload: dict | None = None, workload_name: str = DEFAULT_WORKLOAD) -> dict:
    """What a correct answer looks like: the workload's, or, for hello world, the server's own
    (``server_expect``: its catalogue entry's ``expect``) over the default."""
    if workload_name == DEFAULT_WORKLOAD or workload is None:
        return {**DEFAULT_EXPECT, **(workload or {}).get("expect", {}), **server_expect}
    return {"status": 200, **workload["expect"]}
