"""The app every server hosts: ``apps`` in config names them, ``app`` picks one.
An app's ``workloads`` (else ``app_workloads``, the hello app's) are what its cells load
and how each answer is checked.

An app has a part per language (a key of ``languages``): a module and callable
in a directory, or a file (a Perl ``.psgi``), or both. A catalogue command or
template names the app only through placeholders (``APP_PLACEHOLDERS``), filled
from the part of the server's own language, so a server that can host a
generic WSGI or PSGI app hosts any. Where a part gives a module but no file,
its file is the module's path under the directory with the language's
``module_suffix`` (servers that take a file, such as uWSGI's --wsgi-file).
``{apps}`` in an app's paths is the run directory's copy of the repository's
apps/ (readable by servers that drop privileges).
"""

from __future__ import annotations

APP_PLACEHOLDERS = frozenset({"app_dir", "app_module", "app_callable", "app_file"})
# The app whose paths the conformance probes use (/big, /echo, /lint): a server's HTTP is
# probed with it whichever app the run's cells host.
PROBE_APP = "hello"


def app_name(config: dict, profile: str | None = None) -> str:
    """The app a profile's servers host: the profile's own ``app``, else the run's."""
    own = config["profiles"][profile].get("app") if profile in config["profiles"] else None
    return own or config["app"]


def chosen(config: dict, profile: str | None = None) -> tuple[str, dict]:
    """(name, spec) of the app the servers of ``profile`` (else of the run) host."""
    name = app_name(config, profile)
    return name, config["apps"][name]


def workloads(config: dict, profile: str | None = None) -> dict:
    """The app's workloads (its own ``workloads``, else ``app_workloads``, the hello app's)."""
    return chosen(config, profile)[1].get("workloads") or config["app_workloads"]


def _hosting(config: dict, app: str, servers) -> list[str]:
    """Those of ``servers`` that host ``app`` (a part in their language) or no app at all;
    an unknown name stays, for the profile's check to name it."""

    def hosts(name: str) -> bool:
        spec = config["catalogue"].get(name)
        if spec is None:
            return True
        language = config["languages"].get(spec["language"], {})
        return spec["language"] in config["apps"][app] or not language.get("hosts_apps", True)

    names = list(config["catalogue"]) if servers == "all" else servers
    return [name for name in names if hosts(name)] or list(names)


# What a workload sends beside its path; GET with no body and only the client's headers without them.
REQUEST_KEYS = ("method", "body", "headers")


def sent(spec: dict) -> dict:
    """The request a workload sends beyond a plain GET of its path (method, body, headers)."""
    return {key: spec[key] for key in REQUEST_KEYS if key in spec}


def needs_script(spec: dict) -> bool:
    """Whether a load tool needs a script to send the workload: a mix, or more than a GET."""
    return "mix" in spec or bool(sent(spec))


def endpoints(config: dict, profile: str | None, name: str) -> list[tuple[str, dict]]:
    """(name, spec) of each path a workload requests: its own, or a mix's components."""
    known = workloads(config, profile)
    spec = known[name]
    return [(part, known[part]) for part in spec["mix"]] if "mix" in spec else [(name, spec)]


def mix_order(mix: dict[str, int]) -> list[str]:
    """A mix's workloads for one cycle, each as often as its weight and spread through it
    (3:1:1 gives a b a c a): nginx's smooth weighted round robin. A client that cycles
    through them sends every workload near its share over any stretch of the run."""
    total, current, order = sum(mix.values()), dict.fromkeys(mix, 0), []
    for _ in range(total):
        for name, weight in mix.items():
            current[name] += weight
        chosen_name = max(mix, key=current.__getitem__)  # the first of the largest, in the mix's order
        current[chosen_name] -= total
        order.append(chosen_name)
    return order


def request_order(mix: dict[str, int], known: dict) -> list[str]:
    """The paths of ``mix_order``."""
    return [known[name]["path"] for name in mix_order(mix)]


def with_probe_app(config: dict) -> dict:
    """The config with the probes' app as the app of the run and of every profile."""
    profiles = {name: {**spec, "app": None} for name, spec in config["profiles"].items()}
    return {**config, "app": PROBE_APP, "profiles": profiles}


def expand_app_profiles(config: dict) -> None:
    """A profile naming several ``apps`` becomes one profile per app, NAME-APP, hosting it
    with those of its workloads the app answers (the hello app's ``hello``, a framework
    app's ``db``) and those of its servers whose language the app has a part in (a
    baseline stays): each app's cells are then a profile's, compared among themselves, and
    the profile's name in the selection stands for all of them."""
    expanded = {}
    for name, profile in config["profiles"].items():
        if "apps" not in profile:
            continue
        expanded[name] = []
        for app in profile["apps"]:
            own = {k: v for k, v in profile.items() if k != "apps"}
            known = workloads({**config, "app": app})  # the names were checked before
            own.update(app=app, description=f"{profile['description']}: the {app} app", expanded_from=name)
            own["workloads"] = [w for w in profile.get("workloads", []) if w in known] or profile.get("workloads")
            own["servers"] = _hosting(config, app, profile["servers"])
            expanded[name].append((f"{name}-{app}", own))
    for name, copies in expanded.items():
        del config["profiles"][name]
        config["profiles"].update(copies)
    selected = config["profile"]
    selected = [selected] if isinstance(selected, str) else list(selected)
    if any(name in expanded for name in selected):
        names = {name: [copy for copy, _ in copies] for name, copies in expanded.items()}
        config["profile"] = [copy for name in selected for copy in names.get(name, [name])]


def hosts_apps(config: dict, language: str) -> bool:
    """Whether servers of ``language`` host an app (a baseline serves its own files)."""
    return config["languages"][language].get("hosts_apps", True)


def app_values(config: dict, spec: dict, language: str, apps_dir: str) -> dict[str, str | None]:
    """The app placeholders' values for a server of ``language`` (None where the app's
    part leaves one out, or the app has no part in that language). A module's callable
    defaults to the language's ``default_callable`` (WSGI's ``application``)."""
    part = spec.get(language) or {}
    language_spec = config["languages"][language]
    directory = part["dir"].replace("{apps}", apps_dir) if "dir" in part else None
    file = part["file"].replace("{apps}", apps_dir) if "file" in part else None
    suffix = language_spec.get("module_suffix")
    if file is None and directory and "module" in part and suffix:
        file = f"{directory}/{part['module'].replace('.', '/')}{suffix}"
    callable_name = part.get("callable") or (language_spec.get("default_callable") if "module" in part else None)
    return {"app_dir": directory, "app_module": part.get("module"), "app_callable": callable_name, "app_file": file}


def missing_values(values: dict, used: set[str]) -> list[str]:
    """The app placeholders a server uses (``used``) that the app's part leaves empty."""
    return sorted(name for name in used & APP_PLACEHOLDERS if values.get(name) is None)


def database_engine(config: dict, profile: str | None = None) -> str | None:
    """The database the cells of ``profile`` start for their app (``sqlite`` starts nothing);
    None where the app uses none (``database: true`` declares one)."""
    if not chosen(config, profile)[1].get("database"):
        return None
    own = config["profiles"][profile].get("database") if profile in config["profiles"] else None
    return (own or {}).get("engine", "sqlite")


def database_template(config: dict, engine: str, app: str) -> str:
    """Where the run keeps a database server's template with the app's rows (rule database_template)."""
    return f"{config['results'].rstrip('/')}/databases/{engine}/{app}"


def queries_needed(config: dict, profile: str | None, name: str) -> float | None:
    """Statements the app must run per answer of workload ``name`` (a mix: its parts' by
    weight); None where the workload does not say."""
    known = workloads(config, profile)
    mix = known[name].get("mix")
    if not mix:
        return known[name].get("queries_per_request")
    parts = [known[part].get("queries_per_request") for part in mix]
    if all(part is None for part in parts):
        return None
    return sum((part or 0) * weight for part, weight in zip(parts, mix.values(), strict=True)) / sum(mix.values())


# How an app part's ``requirements`` are installed, by its language's ``requirements``:
# pip requirement specifiers into a directory of the app's own (host.appsite), or Debian
# packages (a Perl module comes from Debian here: there is no CPAN mirror).
PIP, DEBIAN = "pip", "debian"


def requirements(config: dict, app: str) -> dict[str, list[str]]:
    """Per language, what the app's part there asks to be installed (languages without any left out)."""
    spec = config["apps"][app]
    return {
        language: list(spec[language]["requirements"])
        for language in config["languages"]
        if isinstance(spec.get(language), dict) and spec[language].get("requirements")
    }


def installer(config: dict, language: str) -> str | None:
    """How ``language``'s requirements are installed (``pip``, ``debian``), None where it has no installer."""
    return config["languages"][language].get("requirements")


def app_site_record(config: dict, app: str) -> str:
    """Where the run keeps the record of the app's requirements installed (rule app_site)."""
    return f"{config['results'].rstrip('/')}/apps/{app}/site.json"


def apps_needing_install(config: dict, profiles) -> list[str]:
    """The apps the ``profiles`` host whose parts ask for requirements, each once."""
    return sorted(
        {app_name(config, profile) for profile in profiles} & {a for a in config["apps"] if requirements(config, a)}
    )
