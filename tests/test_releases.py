"""Releases as config (issue 71): a server's versions installed side by side, measured by the
lenses, compared check by check, and the first release that changed a check named.

The releases are of a server of the tests' own (tests/apps/tinyserve), built here as wheels
that differ in known ways: 1.0 and 1.1 drop every connection on a graceful reload (SIGHUP),
2.0 keeps them and does a fixed extra ``sum(range(N))`` per answer, about 1% of its work. What
each comparison must show follows from what the releases do, not from the machine's speed:
instructions are counted, and a dropped connection is a failed request however fast.
"""

from __future__ import annotations

import http.server
import io
import json
import shutil
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import QUICK_PROFILE, REPO_ROOT, run_snakemake
from serverbench.decide.pairs import declared_pairs
from serverbench.drive.bisect import SIMPLE_JSON, between, listed_versions, next_middle, overlay
from serverbench.drive.usage import bisect_checks
from serverbench.host.releases import install, not_installed_reason
from serverbench.lenses.releases.record import ReleaseOutcome
from serverbench.plan import config as cfg
from serverbench.plan.catalogue import server_entry
from serverbench.plan.releases import base_server, split_name
from serverbench.record.vocabulary import Kind, Outcome, Status

TINY = REPO_ROOT / "tests" / "apps" / "tinyserve"
# sum(range(N)) per answer: about 1% of tinyserve's user-space instructions per request
# (docs/releases.md has the counts it was set from; the test reads the ratio, within 0.5–2%).
EXTRA_ITERATIONS = 5
RELEASES = {"1.0": ("drop", 0), "1.1": ("drop", 0), "2.0": ("graceful", EXTRA_ITERATIONS)}
TINYSERVE = {"language": "python", "command": ["tinyserve", "{host}", "{port}"],
             "version": ["tinyserve", "--version"], "reload": {"signal": "HUP"}}  # fmt: skip
OPERATIONS = {"rounds": 1, "workers": [1], "idle_s": 0.2, "reloads": 5, "reload_every": 1.0, "concurrency": 2}


def build_release(wheels: Path, release: str, reload: str, extra: int) -> None:
    """A tinyserve wheel of ``release`` into ``wheels``."""
    source = wheels.parent / f"tinyserve-{release}"
    source.mkdir()
    shutil.copy(TINY / "tinyserve.py", source)
    (source / "tinyserve_release.py").write_text(f"RELOAD = {reload!r}\nEXTRA_ITERATIONS = {extra}\n")
    (source / "pyproject.toml").write_text((TINY / "pyproject.toml.in").read_text().replace("{version}", release))
    argv = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    subprocess.run([*argv, str(source)], check=True, capture_output=True, cwd=source)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    found = tmp_path_factory.mktemp("tinyserve") / "wheels"
    found.mkdir()
    for release, (reload, extra) in RELEASES.items():
        build_release(found, release, reload, extra)
    return found


def releases_config(tmp_path: Path, wheels: Path, versions: list[str], **package) -> dict:
    tinyserve = {"servers": ["tinyserve"], "versions": versions, "find_links": str(wheels), **package}
    return {
        "catalogue": {"tinyserve": TINYSERVE},
        "releases": {"tinyserve": tinyserve},
        "releases_dir": str(tmp_path / "prefixes"),
    }


def loaded(tmp_path: Path, wheels: Path, versions: list[str], baseline=None, **overrides) -> dict:
    path = tmp_path / "releases.yaml"
    package = {"baseline": baseline} if baseline else {}
    path.write_text(yaml.safe_dump(releases_config(tmp_path, wheels, versions, **package)))
    config = cfg.read(REPO_ROOT / "config.yaml")
    extra = yaml.safe_load(path.read_text())
    config["catalogue"].update(extra.pop("catalogue"))
    config["releases"].update(extra.pop("releases"))
    config.update(extra, **overrides)
    return cfg.validate(config)


def test_each_release_is_a_catalogue_entry_run_from_its_own_prefix(tmp_path, wheels):
    config = loaded(tmp_path, wheels, ["1.0", "2.0"], servers=["tinyserve@1.1"])
    for release in ("1.0", "1.1", "2.0"):  # declared, and named on the command line
        entry = server_entry(config, f"tinyserve@{release}")
        assert entry.release.version == release and entry.release.of == "tinyserve"
        assert entry.release.requirement == f"tinyserve=={release}"
        assert Path(entry.release.prefix).parent == tmp_path / "prefixes"
        assert entry.command == tuple(TINYSERVE["command"]) and entry.family is None
    assert split_name("gunicorn-gthread@20.1.0") == ("gunicorn-gthread", "20.1.0")
    assert base_server("tinyserve@1.0") == "tinyserve" and base_server("gunicorn+nginx") == "gunicorn+nginx"
    # `servers: all` is the catalogue as written: no release in it.
    assert not any("@" in name for name in cfg.requested_profile({**config, "servers": "all"}, "default")["servers"])


def test_a_release_of_a_server_no_package_provides_is_a_config_error(tmp_path, wheels):
    with pytest.raises(cfg.ConfigError, match="no package of `releases` provides it"):
        loaded(tmp_path, wheels, ["1.0"], servers=["starman@1.0"])


def test_releases_are_paired_with_the_baseline_and_the_release_before(tmp_path, wheels):
    config = loaded(tmp_path, wheels, ["1.0", "1.1", "2.0"])
    names = ["tinyserve@2.0", "tinyserve@1.0", "tinyserve@1.1"]
    pairs = [pair for pair in declared_pairs(config, names) if pair[0] in (Kind.RELEASE, Kind.RELEASE_STEP)]
    assert sorted(pairs) == sorted(
        [
            (Kind.RELEASE, "tinyserve@1.0", "tinyserve@2.0"),
            (Kind.RELEASE, "tinyserve@1.1", "tinyserve@2.0"),
            (Kind.RELEASE_STEP, "tinyserve@1.1", "tinyserve@1.0"),  # 2.0 against 1.1 is already its baseline pair
        ]
    )
    named = loaded(tmp_path, wheels, ["1.0", "1.1", "2.0"], baseline="1.0")
    against = {b for kind, a, b in declared_pairs(named, names) if kind == Kind.RELEASE}
    assert against == {"tinyserve@1.0"}


def test_install_puts_a_release_in_its_prefix_and_leaves_the_harness_alone(tmp_path, wheels):
    config = loaded(tmp_path, wheels, ["1.0", "9.9"])
    pinned = version("gunicorn"), (Path(sys.prefix) / "bin" / "gunicorn").stat().st_mtime
    good = server_entry(config, "tinyserve@1.0").release
    assert not_installed_reason(good) is not None
    record = install(good, tmp_path / "install.log")
    assert record.status is Status.OK and record.installed_version == "1.0" and not record.reused
    assert not_installed_reason(good) is None
    made = Path(good.prefix) / "bin" / "tinyserve"
    assert subprocess.run([made, "--version"], capture_output=True, text=True).stdout.strip() == "tinyserve 1.0"
    assert install(good, tmp_path / "again.log").reused
    missing = server_entry(config, "tinyserve@9.9").release
    record = install(missing, tmp_path / "missing.log")
    assert record.status is Status.SKIPPED and "tinyserve==9.9" in record.reason
    assert "not installed" in not_installed_reason(missing) and not Path(missing.prefix).exists()
    assert (version("gunicorn"), (Path(sys.prefix) / "bin" / "gunicorn").stat().st_mtime) == pinned


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory, wheels) -> Path:
    """The planted releases through the workflow: 1.0 (drops on reload) and 2.0 (1% more work)."""
    where = tmp_path_factory.mktemp("releases-run")
    config = releases_config(where, wheels, ["1.0", "2.0"])
    profile = {**QUICK_PROFILE, "description": "two planted releases", "repeats": 1, "work": True,
               "servers": ["tinyserve@1.0", "tinyserve@2.0", "tinyserve@9.9"], "operations": OPERATIONS}  # fmt: skip
    config["profiles"] = {"rel": profile}
    (where / "releases.yaml").write_text(yaml.safe_dump(config))
    results = where / "results"
    short_lives = str(REPO_ROOT / "tests/data/short-work-lives.yaml")
    done = run_snakemake(
        ["--cores", "4", "--configfile", "config.yaml", short_lives, str(where / "releases.yaml")],
        ["profile=rel", f"results={results}"],
        timeout=900,
        conformance=True,
        work=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return results


@pytest.mark.e2e
def test_the_profile_names_the_change_and_the_release(planted_run):
    verdicts = pd.read_csv(planted_run / "release_verdicts.csv")
    by = verdicts.set_index(["release", "relation", "check"])
    dropped = by.loc[("tinyserve@1.0", "baseline", "reload_failed")]
    assert dropped["outcome"] == Outcome.HIGHER and dropped["a_value"] >= 1 and dropped["b_value"] == 0
    work = by.loc[("tinyserve@2.0", "previous", "instructions_per_request")]
    assert work["outcome"] == Outcome.MORE_WORK and 1.005 < work["estimate"] < 1.02, work.to_dict()
    assert by.loc[("tinyserve@2.0", "previous", "reload_failed"), "outcome"] == Outcome.LOWER
    assert by.loc[("tinyserve@2.0", "previous", "conformance_met"), "outcome"] == ReleaseOutcome.SAME
    answers = (planted_run / "answers.md").read_text()
    assert "tinyserve 2.0 against 1.0: instructions per request more work: 1.0" in answers
    assert "tinyserve 2.0 against 1.0: failed requests per graceful reload lower:" in answers
    page = (planted_run / "index.html").read_text()
    assert 'id="releases"' in page and 'class="changed"' in page
    table = pd.read_csv(planted_run / "releases.csv").set_index(["release", "check"])
    skipped = table.loc[("tinyserve@9.9", "installed")]
    assert skipped["status"] == Status.SKIPPED and "tinyserve==9.9" in skipped["reason"]
    assert table.loc[("tinyserve@9.9", "instructions_per_request"), "status"] == Status.SKIPPED
    installs = [json.loads(p.read_text()) for p in (planted_run / "releases" / "install").glob("*.json")]
    assert sorted((r["version"], r["status"]) for r in installs) == [("1.0", "ok"), ("2.0", "ok"), ("9.9", "skipped")]


@pytest.mark.e2e
def test_compare_between_two_releases_runs_works_as_between_two_commits(planted_run, tmp_path):
    """Each release's work in a run of its own (the planted run's rows, split): compare
    matches them by their server and finds the 1% of work the newer one adds."""
    work = pd.read_csv(planted_run / "work.csv")
    for side, release in (("a", "tinyserve@1.0"), ("b", "tinyserve@2.0")):
        (tmp_path / side).mkdir()
        work[work["server"] == release].to_csv(tmp_path / side / "work.csv", index=False)
    done = subprocess.run(
        [sys.executable, "-m", "serverbench.cli", "compare", str(tmp_path / "a"), str(tmp_path / "b"),
         "--metric", "work", "--format", "csv", "--fail-above", "0.5%"],
        capture_output=True, text=True, cwd=REPO_ROOT,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    rows = pd.read_csv(io.StringIO(done.stdout))
    assert list(rows["server"]) == ["tinyserve"] and rows["outcome"].iloc[0] == Outcome.MORE_WORK


class LocalIndex(http.server.ThreadingHTTPServer):
    """A package index on loopback speaking PEP 691's simple JSON API, as PyPI does: each
    project's files (name, bytes, yanked), so bisect lists releases and pip installs them
    without the network."""

    def __init__(self, projects: dict[str, list[tuple[str, bytes, bool]]]):
        super().__init__(("127.0.0.1", 0), IndexHandler)
        self.projects = projects

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/simple"


class IndexHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        parts = self.path.strip("/").split("/")
        files = {name: data for listed in self.server.projects.values() for name, data, _ in listed}
        if parts[0] == "simple" and len(parts) == 2 and parts[1] in self.server.projects:
            listed = [{"filename": name, "url": f"/files/{name}", "hashes": {}, "yanked": yanked}
                      for name, _, yanked in self.server.projects[parts[1]]]  # fmt: skip
            self._send(
                json.dumps({"meta": {"api-version": "1.0"}, "name": parts[1], "files": listed}).encode(), SIMPLE_JSON
            )
        elif parts[0] == "files" and len(parts) == 2 and parts[1] in files:
            self._send(files[parts[1]], "application/octet-stream")
        else:
            self.send_error(404)

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet: pytest keeps the output for failures
        pass


@pytest.fixture
def local_index():
    made = []

    def serve(projects) -> LocalIndex:
        index = LocalIndex(projects)
        threading.Thread(target=index.serve_forever, daemon=True).start()
        made.append(index)
        return index

    yield serve
    for index in made:
        index.shutdown()
        index.server_close()


# Six releases for bisect, the change (no connection dropped on reload) in 1.4, and 1.2 a wheel
# that does not install (not a zip): bisect must skip it as `git bisect skip` does.
BISECTED = {"1.0": ("drop", 0), "1.1": ("drop", 0), "1.3": ("drop", 0), "1.4": ("graceful", 0), "2.0": ("graceful", 0)}


@pytest.fixture(scope="module")
def bisect_wheels(tmp_path_factory) -> Path:
    found = tmp_path_factory.mktemp("tinyserve-bisect") / "wheels"
    found.mkdir()
    for release, (reload, extra) in BISECTED.items():
        build_release(found, release, reload, extra)
    (found / "tinyserve-1.2-py3-none-any.whl").write_bytes(b"not a wheel: pip refuses it")
    return found


def test_the_middle_release_is_the_one_measured_next_or_the_nearest_that_can_be():
    assert next_middle(0, 5, set()) == 2
    assert next_middle(0, 5, {2}) == 1  # equally near: the older first
    assert next_middle(1, 5, {2}) == 3
    assert next_middle(3, 4, set()) is None and next_middle(1, 3, {2}) is None


@pytest.mark.e2e
def test_bisect_names_the_first_release_that_changed_a_check(tmp_path, bisect_wheels, local_index):
    """1.0, 1.1 and 1.3 drop connections on reload and stay away 0.5 s; 1.4 and 2.0 do not; 1.2
    does not install. Listed and installed from a local index: bisect measures 1.0 against 2.0,
    skips 1.2 (its install's reason said), measures 1.1, then 1.3, then 1.4, and names 1.4. The
    check is the longest time without an answer (0.5 s and its restart, against milliseconds):
    the failed requests of a release that is away count the client's retries, which its speed
    sets, so two releases that drop alike can differ there by a few."""
    files = [(path.name, path.read_bytes(), False) for path in sorted(bisect_wheels.iterdir())]
    index = local_index({"tinyserve": files})
    mine = tmp_path / "mine.yaml"
    config = releases_config(tmp_path, bisect_wheels, ["1.0", "2.0"])
    config["releases"]["tinyserve"] = {"servers": ["tinyserve"], "versions": ["1.0", "2.0"], "index_url": index.url}
    config["profiles"] = {"rel": {**QUICK_PROFILE, "description": "bisect's settings", "repeats": 1,
                                  "servers": ["tinyserve@1.0"], "operations": OPERATIONS}}  # fmt: skip
    mine.write_text(yaml.safe_dump(config))
    out = tmp_path / "bisect"
    done = subprocess.run(
        [sys.executable, "-m", "serverbench.cli", "bisect", "tinyserve", "1.0", "2.0",
         "--check", "reload_longest_gap_s", "--profile", "rel", "--configfile", str(mine), "--out", str(out)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads((out / "bisect.json").read_text())
    assert found["candidates"] == ["1.0", "1.1", "1.2", "1.3", "1.4", "2.0"]
    assert found["first_changed"] == "tinyserve@1.4" and found["skipped"] == ["tinyserve@1.2"]
    assert [(s["older"], s["newer"]) for s in found["steps"]] == [
        ("tinyserve@1.0", "tinyserve@2.0"),
        ("tinyserve@1.0", "tinyserve@1.2"),  # not installed: skipped
        ("tinyserve@1.0", "tinyserve@1.1"),
        ("tinyserve@1.1", "tinyserve@1.3"),
        ("tinyserve@1.3", "tinyserve@1.4"),
    ]
    outcomes = [s["outcome"] for s in found["steps"]]
    assert outcomes[0] == outcomes[4] == Outcome.LOWER and outcomes[1] is None
    assert "install" in found["steps"][1]["reason"]
    # Away alike: no change (within the check's ±10%, or not decided either way, said so).
    assert set(outcomes[2:4]) <= {Outcome.EQUIVALENT, Outcome.UNDETERMINED}
    if Outcome.UNDETERMINED in outcomes[2:4]:
        assert "undetermined: taken as no change" in done.stdout
    assert "First release that changed reload_longest_gap_s: tinyserve@1.4" in done.stdout
    # Each step said when it started (with what may follow and, after the first, its time at the
    # pace so far) and when it ended, as it happened, before the summary.
    lines = done.stdout.splitlines()
    assert lines[0] == "bisect step 0: tinyserve@2.0 against tinyserve@1.0; at most 4 more", lines[:3]
    assert lines[1].startswith("bisect step 0: lower (") and lines[3].startswith("bisect step 1: not measured (")
    assert lines[2].startswith("bisect step 1: tinyserve@1.2 against tinyserve@1.0; at most 3 more, about ")
    assert len([line for line in lines if line.startswith("bisect step")]) == 10
    assert "tinyserve@1.2 against tinyserve@1.0: not measured: its install" in done.stdout


def test_a_bisect_step_asks_only_for_the_lens_its_check_needs(base_config):
    """What bisect reads of the releases lens is its declaration (``Lens.bisection``): the checks
    it makes itself (conformance's, config key ``conformance``) are bisect's checks beside the
    judged ones the lenses offer, and a step's config turns on the probes only for that check."""
    assert bisect_checks(base_config)[-1] == "conformance_met" and "reload_failed" in bisect_checks(base_config)
    probes = overlay(base_config, "gunicorn", ["gunicorn@1", "gunicorn@2"], "conformance_met", "releases")
    reloads = overlay(base_config, "gunicorn", ["gunicorn@1", "gunicorn@2"], "reload_failed", "releases")
    assert probes["conformance"] is True and not {"operations", "work"} & set(probes["profiles"]["bisect"])
    assert reloads["conformance"] is False and reloads["profiles"]["bisect"]["operations"]


def test_bisect_lists_the_releases_between_from_an_index_and_from_a_wheel_directory(wheels, local_index):
    """An index's simple JSON API (final releases, in order; a release whose files are all yanked,
    a pre-release and a file of no release left out), the wheels of a find_links directory."""
    listed = [(name, b"", False) for name in (
        "gunicorn-20.1.0.tar.gz", "gunicorn-20.1.0-py3-none-any.whl", "gunicorn-21.0.0-py3-none-any.whl",
        "gunicorn-21.0.1.tar.gz", "gunicorn-22.0.0rc1-py3-none-any.whl", "gunicorn-23.0.0-py3-none-any.whl",
        "gunicorn-19.0.win32.exe", "gunicorn-24.0.0-py3-none-any.whl")]  # fmt: skip
    listed.append(("gunicorn-21.1.0-py3-none-any.whl", b"", True))  # yanked
    index = local_index({"gunicorn": listed})
    versions = listed_versions("gunicorn", {"index_url": index.url})
    assert versions == ["20.1.0", "21.0.0", "21.0.1", "23.0.0", "24.0.0"]
    assert between(versions, "20.1.0", "23.0.0") == ["20.1.0", "21.0.0", "21.0.1", "23.0.0"]
    assert listed_versions("tinyserve", {"find_links": str(wheels)}) == ["1.0", "1.1", "2.0"]
