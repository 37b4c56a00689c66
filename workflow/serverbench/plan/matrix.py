"""The cell matrix of a validated config, computed once per matrix.

``Matrix`` holds every selected profile resolved for this host, the cells in
their rounds (each in its own seeded random order), and each cell's measuring conditions (a digest that
makes Snakemake rerun exactly the cells whose conditions changed). The
workflow builds one when it parses the Snakefile; every per-job question
(priority, threads, memory, runtime, conditions) is then a lookup.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
from functools import cached_property
from pathlib import Path

from serverbench import REPO_ROOT, files
from serverbench.plan import apps
from serverbench.plan.config import effective_profile, requested_profile, selected_profiles
from serverbench.plan.shapes import Cell, Profile


def planned_repeats(profile: dict) -> int:
    """Rounds every cell of a (requested) profile gets before any precision is judged."""
    return (profile["min_repeats"] or profile["repeats"]) if profile["precision"] else profile["repeats"]


def possible_repeats(profile: dict) -> int:
    """Rounds a profile may reach: ``max_repeats`` where precision adds rounds."""
    if not profile["precision"]:
        return planned_repeats(profile)
    return max(planned_repeats(profile), profile["max_repeats"] or profile["repeats"])


def cells(config: dict, rounds=planned_repeats) -> list[Cell]:
    """Every planned cell of the selected profiles, in a stable order (rounds a
    precision-driven profile may add later are in ``cells(config, possible_repeats)``)."""
    out = []
    for profile_name in selected_profiles(config):
        profile = requested_profile(config, profile_name)
        for workload in profile["workloads"]:
            for tool in profile["tools"]:
                for server in profile["servers"]:
                    for concurrency in profile["concurrency"]:
                        for repeat in range(1, rounds(profile) + 1):
                            out.append(Cell(profile_name, tool, server, concurrency, repeat, workload))
    return out


def rate_cells(profiles: dict[str, Profile]) -> list[Cell]:
    """The open-loop cells of profiles with ``open_loop``: per workload and server,
    each fraction of the server's capacity, at the rate tool's connections."""
    out = []
    for name, profile in profiles.items():
        spec = profile.open_loop
        if not spec:
            continue
        connections = spec["connections"] or profile.workers
        for workload in profile.workloads:
            for server in profile.servers:
                for fraction in spec["fractions"]:
                    for repeat in range(1, spec["repeats"] + 1):
                        out.append(Cell(name, spec["tool"], server, connections, repeat, workload, float(fraction)))
    return out


def in_rounds(cells_in_order: list[Cell], seed: int) -> list[Cell]:
    """The cells in rounds, reproducible from ``seed``: round r holds repeat r of
    every cell, in its own random order.

    A slow drift of a shared machine (a busy neighbour for minutes) then falls on
    every server of a round alike, and the rounds model (``decide.inference``)
    takes it out of each comparison, instead of leaving it in as noise or, with
    one fixed order, always on the same cells.
    """
    rng = random.Random(seed)
    order: list[Cell] = []
    for repeat in sorted({cell.repeat for cell in cells_in_order}):
        one_round = [cell for cell in cells_in_order if cell.repeat == repeat]
        rng.shuffle(one_round)
        order += one_round
    return order


def run_seed(config: dict) -> int:
    """The run's seed: ``seed`` from config, else a new one, written back into the
    config so every job of the run (and its records) carries the same one."""
    if config.get("seed") is None:
        config["seed"] = secrets.randbelow(2**31)
    return config["seed"]


SEED_FILE = "seed"


def kept_seed(config: dict) -> int:
    """The run's seed: ``seed`` from config, else the one kept in the results directory,
    else a new one, kept there. A resumed run, and an executor that parses the workflow
    again for every job, then order and record the same seed as the run's first parse.
    A new run (a new results directory, or the file removed) draws a new one."""
    if config.get("seed") is not None:
        return config["seed"]
    path = Path(config["results"]) / SEED_FILE
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        seed = secrets.randbelow(2**31)
        files.write_atomic(path, f"{seed}\n")
        return seed


def file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# A catalogue entry's facts about the server that shape none of its cells: its idle keep-alive
# timeout and its own bound on a request (the idle-pool and overload lenses read them; the cells
# run the command as it is).
NOT_DIGESTED = ("keepalive", "request_timeout")


class Matrix:
    def __init__(self, config: dict):
        self.config = config
        self.profiles: dict[str, Profile] = {
            name: effective_profile(config, name) for name in selected_profiles(config)
        }
        self.cells = cells(config)
        # With the rounds precision may add: each has its own place in the order.
        self.possible_cells = cells(config, possible_repeats)
        self.rate_cells = rate_cells(self.profiles)
        # Rate cells wait for their capacity cells, so they come after them in any order.
        seed = run_seed(config)
        self.order = in_rounds(self.possible_cells, seed) + in_rounds(self.rate_cells, seed)
        self._positions = {cell.relpath: index for index, cell in enumerate(self.order, start=1)}
        self._conditions: dict[tuple, str] = {}
        self._app_digests: dict[str, dict] = {}
        self._probed_in: dict[tuple[str, str], str] = {}  # (profile, server) -> the profile probing it

    def groups(self) -> list[Cell]:
        """One cell per measured condition (its first repeat), in the stable order."""
        return [cell for cell in self.cells if cell.repeat == 1]

    def round_of(self, profile: str, repeat: int) -> list[Cell]:
        """Every cell of a profile in one round (planned or added by precision)."""
        return [cell for cell in self.possible_cells if cell.profile == profile and cell.repeat == repeat]

    def conformance_profile(self, profile: str, server: str) -> str:
        """The profile whose conformance result stands for the server's in ``profile``: the
        first selected one with the server that probes it alike. Probes always host the hello
        app, so profiles that differ only in their app (a profile's ``apps``) probe once."""
        key = (profile, server)
        if key not in self._probed_in:
            probed = _probe_conditions(self.profiles[profile])
            alike = (n for n, p in self.profiles.items() if server in p.servers and _probe_conditions(p) == probed)
            self._probed_in[key] = next(alike, profile)
        return self._probed_in[key]

    def capacity_cells(self, profile: str, workload: str, server: str) -> list[Cell]:
        """The closed-loop cells a server's capacity is measured by (every tool and concurrency)."""
        return [
            cell for cell in self.cells if (cell.profile, cell.workload, cell.server) == (profile, workload, server)
        ]

    def position(self, relpath: str) -> int | None:
        """1 for the cell that runs first in the seeded order."""
        return self._positions.get(relpath)

    def priority(self, relpath: str) -> int:
        """The bench rule's priority: the first cell of the seeded order runs first."""
        position = self.position(relpath)
        return len(self.order) - position + 1 if position else 0

    @cached_property
    def apps_digest(self) -> str:
        return tree_digest(REPO_ROOT / "apps")

    def app_digest(self, profile: str) -> dict:
        """The app a profile's servers host (plan.apps): its name, spec and, for code outside
        the repository's apps/, a digest of that code, so that a changed app measures again."""
        if profile not in self._app_digests:
            name, spec = apps.chosen(self.config, profile)
            parts = [part for key, part in spec.items() if isinstance(part, dict) and key != "workloads"]
            code = {}
            for path in filter(None, (part.get(key) for part in parts for key in ("dir", "file"))):
                if not path.startswith("{apps}"):
                    found = Path(path)
                    code[path] = tree_digest(found) if found.is_dir() else file_digest(found)
            self._app_digests[profile] = {"name": name, "spec": spec, "code": code}
        return self._app_digests[profile]

    def conditions(self, profile: str, tool: str, server: str, workload: str) -> str:
        """A digest of everything that shapes a cell's measurement (a rule parameter)."""
        key = (profile, tool, server, workload)
        if key not in self._conditions:
            self._conditions[key] = self._digest(*key)
        return self._conditions[key]

    def _digest(self, profile: str, tool: str, server: str, workload: str) -> str:
        config = self.config
        server_spec = {key: value for key, value in config["catalogue"][server].items() if key not in NOT_DIGESTED}
        spec = {
            "profile": self.profiles[profile].measuring_conditions(),
            "server": server_spec,
            "templates": {name: file_digest(REPO_ROOT / path) for name, path in server_spec.get("files", {}).items()},
            "apps": self.apps_digest,
            "app": self.app_digest(profile),
            "tool": config["load_tools"][tool],
            "language": config["languages"][server_spec["language"]],
            "flags": config["flags"],
            "workload": apps.workloads(config, profile).get(workload),
        }
        return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _probe_conditions(profile: Profile) -> dict:
    """What shapes a server's conformance probes: its measuring conditions but the app it hosts."""
    conditions = profile.measuring_conditions()
    for key in ("app", "server_spread", "study"):
        conditions.pop(key, None)
    return conditions
