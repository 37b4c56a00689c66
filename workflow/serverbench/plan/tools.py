"""What kind of load a tool drives, from its command: the one place that knows.

A closed-loop tool keeps a number of connections busy (each sends its next
request when the last is answered); an open-loop tool offers a constant rate
(``{rate}`` in its command) whatever the server does. A timed tool runs for
``{duration}`` seconds rather than a number of requests.
"""

from __future__ import annotations


def _takes(spec: dict, placeholder: str) -> bool:
    return "{" + placeholder + "}" in " ".join(map(str, spec["command"]))


def is_open_loop(spec: dict) -> bool:
    """The tool offers a constant rate (its command takes ``{rate}``)."""
    return _takes(spec, "rate")


def is_timed(spec: dict) -> bool:
    """The tool runs for a duration (its command takes ``{duration}``), not a number of requests."""
    return _takes(spec, "duration")


def takes_whole_seconds(spec: dict) -> bool:
    """A timed tool whose ``{duration}`` is whole seconds (wrk's -d reads no fraction); a
    fractional warm-up of it runs for the next whole second and is interrupted (SIGINT:
    wrk stops and reports) at its time."""
    return spec["parser"] == "wrk" and is_timed(spec)


def closed_loop_tools(config: dict) -> set[str]:
    """The names of the config's closed-loop tools."""
    return {name for name, spec in config["load_tools"].items() if not is_open_loop(spec)}


def _names(value) -> set[str]:
    """Every string in a profile's settings, at any depth (a lens names its client tool there)."""
    if isinstance(value, dict):
        return set().union(*map(_names, value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*map(_names, value)) if value else set()
    return {value} if isinstance(value, str) else set()


def programs_of(config: dict, profiles: list[dict]) -> set[str]:
    """The programs the load tools named anywhere in ``profiles`` (as written, overrides applied)
    start: a run's cells and lenses need them, and one the install leaves to the run (oha) is
    built first."""
    tools = config["load_tools"]
    return {str(tools[name]["command"][0]) for profile in profiles for name in _names(profile) & set(tools)}
