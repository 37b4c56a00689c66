"""The comparisons a run declares (``comparisons`` in config), at one condition.

- *same server*: one product serving two languages (uWSGI python against uWSGI psgi);
- *family*: one design in two languages (preforking gunicorn against Starman);
- *named*: pairs listed in ``comparisons.pairs``;
- *ceiling*: every server against ``comparisons.ceiling``;
- *A/A*: a catalogue alias (``alias_of``) against its original: the same
  server twice, whose outcome must never be faster or slower;
- *variant*: a catalogue variant (``variant_of``: another version or
  configuration of a server) against its original, in the same rounds;
- *release*, *release step*: a server's release (``SERVER@VERSION``, config
  ``releases``) against the baseline release, and against the release before it.
Languages come from the catalogue (``plan.languages``): any two compared ones.
"""

from __future__ import annotations

from serverbench.plan import languages
from serverbench.plan.releases import release_pairs
from serverbench.record.vocabulary import Kind

AA = Kind.AA
VARIANT = Kind.VARIANT
# The kind of a verdicts.csv row comparing how evenly two servers served their connections
# (decide.fairness), where starvation keeps their req/s apart.
FAIRNESS = Kind.FAIRNESS
# The kinds of a verdicts.csv row about latency under load (decide.latency), not throughput.
LATENCY_KINDS = (Kind.KNEE, Kind.KNEE_RATIO, Kind.P99_AT_FRACTION, Kind.P99_AT_EQUAL_LOAD)


def declared_pairs(config: dict, servers: list[str]) -> list[tuple[str, str, str]]:
    """(kind, a, b) for the servers present at one condition, as ``comparisons`` declares."""
    spec, catalogue = config["comparisons"], config["catalogue"]
    pairs = []
    for a, b in languages.cross_language_servers(config, servers):
        same_product = catalogue[a].get("product") and catalogue[a].get("product") == catalogue[b].get("product")
        same_family = catalogue[a].get("family") and catalogue[a].get("family") == catalogue[b].get("family")
        if spec["same_server"] and same_product:
            pairs.append((Kind.SAME_SERVER, a, b))
        elif spec["families"] and same_family:
            pairs.append((Kind.FAMILY, a, b))
    pairs += [(Kind.NAMED, a, b) for a, b in spec["pairs"] if a in servers and b in servers]
    copies = {}
    for kind, key in ((AA, "alias_of"), (VARIANT, "variant_of")):
        found = {server: catalogue[server][key] for server in servers if catalogue[server].get(key)}
        pairs += [(kind, copy, original) for copy, original in found.items() if original in servers]
        copies.update(found)
    pairs += release_pairs(config, servers)
    ceiling = spec["ceiling"]
    if ceiling in servers:
        pairs += [(Kind.CEILING, server, ceiling) for server in servers if server not in (ceiling, *copies)]
    return pairs


def best_of_languages(config: dict, candidates: dict[str, float], servers: list[str]) -> dict:
    """For each pair of compared languages with servers present (``servers``): the best
    candidate of each (highest score in ``candidates``, server → score), or None where a
    language has no candidate. Keyed by the pair of languages."""
    present = {languages.language_of(config, server) for server in servers}
    out = {}
    for pair in languages.pairs_of_languages(config):
        if not set(pair) <= present:
            continue
        best = []
        for language in pair:
            members = [s for s in candidates if languages.language_of(config, s) == language]
            best.append(max(members, key=lambda s: candidates[s]) if members else None)
        out[pair] = tuple(best)
    return out
