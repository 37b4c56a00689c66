"""The languages a run compares, as the config declares them: the catalogue
names each server's language, ``languages`` says how each is called and
whether its servers run application code (baselines run none and are
compared with nobody across languages). No other module names a language."""

from __future__ import annotations

from itertools import combinations, product


def compared(config: dict) -> list[str]:
    """The languages whose servers are compared across languages, in the config's order."""
    return [name for name, spec in config["languages"].items() if spec.get("compared", True)]


def title(config: dict, language: str) -> str:
    """How a language is called in sentences (its ``title``, else its key)."""
    return (config["languages"].get(language) or {}).get("title") or language


def language_of(config: dict, server: str) -> str:
    return config["catalogue"][server]["language"]


def pairs_of_languages(config: dict) -> list[tuple[str, str]]:
    """Every pair of compared languages, in the config's order (one pair with two languages)."""
    return list(combinations(compared(config), 2))


def cross_language_servers(config: dict, servers: list[str]) -> list[tuple[str, str]]:
    """(a, b) for every two servers of two compared languages, the earlier language first."""
    by_language = {name: [s for s in servers if language_of(config, s) == name] for name in compared(config)}
    pairs = []
    for first, second in pairs_of_languages(config):
        pairs += product(by_language[first], by_language[second])
    return pairs
