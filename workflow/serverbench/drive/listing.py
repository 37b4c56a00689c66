"""``serverbench list [WHAT]``: what this checkout can answer and with what: the lenses (each
one's question), the profiles (each one's question and the lenses it runs), the servers, the
apps and their workloads, and the checks ``serverbench bisect --check`` takes. Read from the
config and the lens registry, so it never disagrees with them."""

from __future__ import annotations

import argparse
import json
import re
import sys

from serverbench import registry
from serverbench.drive import configfiles, docsfigures
from serverbench.drive.usage import LISTS, bisect_checks
from serverbench.plan import config as cfg
from serverbench.plan.catalogue import server_entry


def first_sentence(text: str | None) -> str:
    """A description's first sentence, on one line."""
    words = " ".join((text or "").split())
    end = words.find(". ")
    return words if end < 0 else words[: end + 1]


def lenses(config: dict) -> list[dict]:
    return [
        {
            "name": lens.name,
            "question": lens.question,
            "profile_key": lens.profile_key,
            "checks": [check.name for check in lens.checks if check.judged],
        }
        for lens in registry.lenses(config)
    ]


def profiles(config: dict) -> list[dict]:
    """Each profile with its question and the lenses it runs besides the timed rounds."""
    found, known = [], registry.lenses(config)
    for name, profile in config["profiles"].items():
        asked = [lens.name for lens in known if lens.asked_by(profile)]
        servers = profile.get("servers")
        found.append({
            "name": name, "question": first_sentence(profile.get("description")), "lenses": asked,
            "servers": len(servers) if isinstance(servers, list) else servers,
            "recorded_s": docsfigures.profile_time(name),  # its recorded run's (docs/data/profile-times.yaml)
        })  # fmt: skip
    return found


# The profile settings a catalogue description may name ("{workers} processes of {threads} threads
# each"): a server has none of its own, it takes them from the profile that runs it.
DESCRIBED_SETTINGS = ("workers", "workers_min", "threads", "backlog")
PLACEHOLDER = re.compile(r"{(\w+)}")


def settings_profile(config: dict, server: str) -> str:
    """The profile whose settings a server's description is filled from: the selected one where it
    names the server, else the first that names it (the autoscalers': autoscale), else the
    selected one."""
    selected = cfg.selected_profiles(config)
    naming = [name for name, profile in config["profiles"].items() if server in _named(profile.get("servers"))]
    return next((name for name in selected if name in naming), naming[0] if naming else selected[0])


def _named(servers) -> list:
    """The servers a profile names (``all`` names none: it is the catalogue as written)."""
    return servers if isinstance(servers, list) else []


def described(config: dict, server: str, entry: dict) -> tuple[str, str | None]:
    """A server's description (its first sentence) with the profile settings it names filled in,
    the profile named ("…; 5 to 100 workers (the autoscale profile's settings)"), and that
    profile (None where the description names no setting)."""
    text = first_sentence(entry.get("description"))
    if not set(PLACEHOLDER.findall(text)) & set(DESCRIBED_SETTINGS):
        return text, None
    name = settings_profile(config, server)
    profile = config["profiles"][name]
    values = {key: profile.get(key) for key in DESCRIBED_SETTINGS}
    values["workers_min"] = values["workers_min"] or values["workers"]  # as a run resolves it (plan.scaling)

    def value(found: re.Match) -> str:  # a placeholder the profile gives no value stays as written
        return found[0] if values.get(found[1]) is None else str(values[found[1]])

    return f"{PLACEHOLDER.sub(value, text)} (the {name} profile's settings)", name


def servers(config: dict) -> list[dict]:
    """Each server with its language, its family (the design compared across languages) and the
    server it is measured against where it is a copy (a variant, an A/A alias, a deployment
    behind a front against itself bare)."""
    found = []
    for name, entry in config["catalogue"].items():
        fronted = entry.get("fronted") or {}
        against = entry.get("variant_of") or entry.get("alias_of") or fronted.get("server")
        recycle = server_entry(config, name).recycle
        description, settings_from = described(config, name, entry)
        found.append({
            "name": name, "language": entry.get("language"), "family": entry.get("family"),
            "compared_with": against, "planted": entry.get("planted"),
            "description": description, "settings_from": settings_from,
            "recycles": recycle.said if recycle else None,  # None: not declared in its entry
        })  # fmt: skip
    return found


def apps(config: dict) -> list[dict]:
    return [
        {
            "name": name,
            "description": first_sentence(app.get("description")),
            "workloads": sorted(app.get("workloads") or config.get("app_workloads") or {}),
        }
        for name, app in config["apps"].items()
    ]


def lists(config: dict) -> dict[str, list]:
    return {
        "lenses": lenses(config),
        "profiles": profiles(config),
        "servers": servers(config),
        "apps": apps(config),
        "checks": [{"name": check} for check in bisect_checks(config)],
    }


def line(what: str, row: dict) -> str:
    if what == "lenses":
        key = f" (profile key `{row['profile_key']}`)" if row["profile_key"] else ""
        return f"{row['name']:<12} {row['question']}{key}"
    if what == "profiles":
        runs = ", ".join(["timed rounds", *row["lenses"]])
        said = docsfigures.profile_time_said(row["name"])
        took = f", {said}" if said else ""
        return f"{row['name']:<16} {row['question']} [{runs}{took}]"
    if what == "servers":
        against = f" (against {row['compared_with']})" if row["compared_with"] else ""
        against += f"; {row['recycles']}" if row["recycles"] else ""
        return f"{row['name']:<28} {row['language'] or '':<8} {row['family'] or '':<18} {row['description']}{against}"
    if what == "apps":
        return f"{row['name']:<12} {row['description']} (workloads: {', '.join(row['workloads']) or 'hello'})"
    return row["name"]


def run(args: argparse.Namespace) -> int:
    try:
        found = lists(configfiles.load(args.config, args.configfile))
    except cfg.ConfigError as exc:
        sys.stderr.write(f"serverbench list: {exc}\n")
        return 2
    chosen = [args.what] if args.what else list(LISTS)
    if args.json:
        json.dump({what: found[what] for what in chosen}, sys.stdout, indent=2)
        print()
        return 0
    for what in chosen:
        print(f"{what} ({len(found[what])}):")
        for row in found[what]:
            print(f"  {line(what, row)}")
        print()
    if not args.what:
        print("Run a profile: snakemake --cores 4 --config profile=NAME; one list: serverbench list profiles")
    return 0
