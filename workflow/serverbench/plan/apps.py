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


def chosen(config: dict) -> tuple[str, dict]:
    """(name, spec) of the app this run's servers host."""
    return config["app"], config["apps"][config["app"]]


def workloads(config: dict) -> dict:
    """The run's app's workloads (its own ``workloads``, else ``app_workloads``, the hello app's)."""
    return chosen(config)[1].get("workloads") or config["app_workloads"]


def with_probe_app(config: dict) -> dict:
    """The config with the probes' app as the run's app."""
    return {**config, "app": PROBE_APP}


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
