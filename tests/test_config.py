"""Config validation: every bad config stops with one message naming the key path."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
from serverbench import REPO_ROOT
from serverbench.plan import config as cfg
from serverbench.plan import matrix, scaling

pytestmark = pytest.mark.quick  # the edit-run loop's set: make test-quick

SHIPPED = cfg.read(REPO_ROOT / "config.yaml")


def broken(mutate):
    config = copy.deepcopy(SHIPPED)
    mutate(config)
    return config


def _del(mapping, key):
    del mapping[key]


CPU_MISSING = max(os.sched_getaffinity(0)) + 1

BAD = {
    "unknown top-level key": (lambda c: c.update(colour="red"), "<top>", "colour"),
    "unknown profile key": (
        lambda c: c["profiles"]["default"].update(wrokers=2),
        "profiles.default",
        "wrokers",
    ),
    "wrong type": (lambda c: c["profiles"]["default"].update(repeats="three"), "profiles.default.repeats", "integer"),
    "worker formula with an unknown name": (
        lambda c: c["profiles"]["default"].update(workers="2*cores+1"),
        "profiles.default.workers",
        "'cores' is not allowed",
    ),
    "more CPUs than the host, no scale_down": (
        lambda c: c["profiles"]["default"].update(server_cpus=len(os.sched_getaffinity(0)) + 4),
        "profiles.default.server_cpus",
        "scale_down: true",
    ),
    "workers_min above workers": (
        lambda c: c["profiles"]["default"].update(workers=2, workers_min=5),
        "profiles.default.workers_min",
        "more than workers",
    ),
    "unknown workload": (lambda c: c.update(workloads=["graphql"]), "workloads[0]", "graphql"),
    "work counted for an unknown workload": (
        lambda c: c.update(profile="apps", work=["fortunes", "graphql"]),
        "work[1]",
        "unknown workload 'graphql'",
    ),
    "constant-rate tool without a rate": (
        lambda c: c.update(profile="open-loop") or c["profiles"]["open-loop"].pop("rate"),
        "profiles.open-loop.rate",
        "needs `rate`",
    ),
    "docker isolation in a network namespace": (
        lambda c: c.update(isolation="docker", network="netns"),
        "profiles.default.network",
        "not available with isolation: docker",
    ),
    "workload path not absolute": (
        lambda c: c["app_workloads"]["json"].update(path="json"),
        "app_workloads.json.path",
        "'json' does not match '^/'",
    ),
    "server without a command": (
        lambda c: _del(c["catalogue"]["gunicorn"], "command"),
        "catalogue.gunicorn",
        "command",
    ),
    "command as a shell string": (
        lambda c: c["catalogue"]["gunicorn"].update(command="gunicorn hello:app"),
        "catalogue.gunicorn.command",
        "array",
    ),
    "unknown placeholder": (
        lambda c: c["catalogue"]["gunicorn"]["command"].append("{wrkers}"),
        "catalogue.gunicorn.command[",
        "{wrkers}",
    ),
    "unknown tool placeholder": (
        lambda c: c["load_tools"]["wrk"]["command"].append("{uri}"),
        "load_tools.wrk.command[",
        "{uri}",
    ),
    "CPU the machine lacks": (
        lambda c: c["profiles"]["default"].update(server_cpus=[CPU_MISSING]),
        "profiles.default.server_cpus",
        "not available",
    ),
    "client and server share a CPU": (
        lambda c: c["profiles"]["default"].update(client_cpus=c["profiles"]["default"]["server_cpus"]),
        "profiles.default.client_cpus",
        "overlaps",
    ),
    "unknown profile": (lambda c: c.update(profile="lowest"), "profile", "lowest"),
    "unknown server in a profile": (
        lambda c: c["profiles"]["default"]["servers"].append("apache1"),
        "profiles.default.servers[",
        "apache1",
    ),
    "unknown server selected": (lambda c: c.update(servers=["nginx-unit-9"]), "servers[0]", "nginx-unit-9"),
    "unknown tool": (lambda c: c.update(tools=["siege"]), "tools[0]", "siege"),
    "concurrency 0": (lambda c: c.update(concurrency=[0]), "concurrency", "minimum"),
    "negative concurrency": (
        lambda c: c["profiles"]["default"].update(concurrency=[-5]),
        "profiles.default.concurrency[0]",
        "minimum",
    ),
    "wrk given a fraction of a second": (
        lambda c: c["profiles"]["default"].update(duration=1.5),
        "profiles.default.duration",
        "wrk takes whole seconds: 1.5 cannot be its -d",
    ),
    "repeats 0": (lambda c: c["profiles"]["default"].update(repeats=0), "profiles.default.repeats", "minimum"),
    "unparsable memory limit": (
        lambda c: c["profiles"]["default"].update(memory_limit="lots"),
        "profiles.default.memory_limit",
        "'lots' does not match",
    ),
    "empty server list": (
        lambda c: c["profiles"]["default"].update(servers=[]),
        "profiles.default.servers",
        "should be non-empty",
    ),
    "unknown parser": (lambda c: c["load_tools"]["wrk"].update(parser="siege"), "load_tools.wrk.parser", "siege"),
    "template file missing": (
        lambda c: c["catalogue"]["nginx-baseline"]["files"].update({"nginx.conf": "workflow/templates/nope.conf"}),
        "catalogue.nginx-baseline.files.nginx.conf",
        "not found",
    ),
    "unitd path not executable": (
        lambda c: c.update(programs={"unitd": str(REPO_ROOT / "config.yaml")}),
        "programs.unitd",
        "not an executable",
    ),
    "relative program path": (
        lambda c: c.update(programs={"unitd": "unitd"}),
        "programs.unitd",
        "'unitd' does not match '^/'",
    ),
    "concurrency beyond the open-file limit": (
        lambda c: c.update(concurrency=[10**6]),
        "concurrency[0]",
        "open-file limit",
    ),
    "backend without its socket": (
        lambda c: _del(c["catalogue"]["flup-nginx"], "backend_socket"),
        "catalogue.flup-nginx",
        "backend_socket",
    ),
    "control file not among the files": (
        lambda c: c["catalogue"]["unit-python"]["control"].update(file="other.json"),
        "catalogue.unit-python.control.file",
        "other.json",
    ),
    "open loop with an unknown tool": (
        lambda c: (c.update(profile="latency"), c["profiles"]["latency"]["open_loop"].update(tool="ohaa")),
        "profiles.latency.open_loop.tool",
        "ohaa",
    ),
    "open loop with a closed-loop tool": (
        lambda c: (c.update(profile="latency"), c["profiles"]["latency"]["open_loop"].update(tool="wrk")),
        "profiles.latency.open_loop.tool",
        "takes no {rate}",
    ),
    "open loop durations reversed": (
        lambda c: (c.update(profile="latency"), c["profiles"]["latency"]["open_loop"].update(min_duration=10)),
        "profiles.latency.open_loop.min_duration",
        "above max_duration",
    ),
    "open loop with precision-driven repeats": (
        lambda c: (c.update(profile="latency"), c["profiles"]["latency"].update(precision=0.05)),
        "profiles.latency.open_loop",
        "precision",
    ),
    "unknown app": (lambda c: c.update(app="mine"), "app", "'mine' is not one of apps: dancer2, django, flask, hello"),
    "a workload's pattern that is no regular expression": (
        lambda c: c["app_workloads"]["hello"]["expect"].update(matches="Hello (World"),
        "app_workloads.hello.expect.matches",
        "not a regular expression",
    ),
    "an app's part in an unknown language": (
        lambda c: c["apps"]["hello"].update(ruby={"file": "hello.ru"}),
        "apps.hello.ruby",
        "not a language",
    ),
    "an app's module not a dotted name": (
        lambda c: c["apps"]["hello"]["python"].update(module="hello:application"),
        "apps.hello.python.module",
        "hello:application",
    ),
    "unknown language": (
        lambda c: c["catalogue"]["gunicorn"].update(language="ruby"),
        "catalogue.gunicorn.language",
        "ruby",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_names_the_key_path(case):
    mutate, path, detail = BAD[case]
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.validate(broken(mutate))
    message = str(caught.value)
    assert message.startswith("config error at ")
    assert path in message, message
    assert detail in message, message


def test_shipped_config_is_valid():
    cfg.validate(copy.deepcopy(SHIPPED))


def test_matrix_has_one_cell_per_combination():
    config = copy.deepcopy(SHIPPED)
    config.update(servers=["gunicorn", "starman"], tools=["wrk"], concurrency=[10, 100], repeats=3)
    cells = matrix.cells(cfg.validate(config))
    assert len(cells) == 2 * 1 * 2 * 3
    assert len({c.relpath for c in cells}) == len(cells)
    assert cells[0].relpath == "default/hello/wrk/gunicorn/c10/r1"


def test_rate_cells_follow_the_capacity_cells_of_each_server():
    config = cfg.validate(copy.deepcopy(SHIPPED) | {"profile": "latency"})
    built = matrix.Matrix(config)
    spec = SHIPPED["profiles"]["latency"]
    servers, fractions = spec["servers"], spec["open_loop"]["fractions"]
    assert len(built.rate_cells) == len(servers) * len(fractions) * spec["open_loop"]["repeats"]
    first = built.rate_cells[0]
    assert first.relpath == "latency/hello/oha/nginx-baseline/c2/f0.25/r1"
    wildcards = type("W", (), {**first.__dict__, "fraction": "0.25", "concurrency": "2", "repeat": "1"})
    assert matrix.Cell.from_wildcards(wildcards) == first
    # Every rate cell comes after every closed-loop cell in the seeded order (it needs their capacity).
    positions = [built.position(cell.relpath) for cell in built.cells]
    assert max(positions) < min(built.position(cell.relpath) for cell in built.rate_cells)
    capacity = built.capacity_cells("latency", "hello", "gunicorn")
    assert [(c.tool, c.concurrency) for c in capacity] == [("oha-closed", 2)] * spec["repeats"]


def test_workloads_multiply_the_matrix():
    config = copy.deepcopy(SHIPPED)
    config.update(profile="worker-models", concurrency=[10], repeats=1)
    cells = matrix.cells(cfg.validate(config))
    assert {c.workload for c in cells} == {"hello", "json", "big", "cpu", "sleep"}
    assert len(cells) == 5 * 4


def test_every_shipped_profile_resolves_on_this_host():
    validated = cfg.validate(copy.deepcopy(SHIPPED))  # `apps` made into a profile per app
    assert {"apps-hello", "apps-flask", "apps-django", "apps-dancer2", "apps-mojolicious"} <= set(validated["profiles"])
    for name in validated["profiles"]:
        profile = cfg.effective_profile(validated, name)
        assert profile.server_cpus and profile.client_cpus
        assert not set(profile.server_cpus) & set(profile.client_cpus)
        assert isinstance(profile.workers, int) and profile.workers >= 1


HOST4 = [0, 1, 2, 3]


def resolve(host=HOST4, memory=8 * 1024**3, **profile):
    base = {"server_cpus": [0], "client_cpus": [1], "memory_limit": None, "workers": 2, "threads": 1}
    return scaling.resolve({**base, **profile}, host, memory)


def test_worker_formulas_use_the_servers_cpus():
    assert resolve(server_cpus=[0, 1], client_cpus=[2], workers="2*cpus+1")["workers"] == 5
    assert resolve(server_cpus=3, client_cpus=1, workers="max(2, cpus)", threads="host_cpus")["threads"] == 4
    assert resolve(workers="ceil(cpus / 2)")["workers"] == 1
    with pytest.raises(scaling.ScaleError, match="__import__"):
        resolve(workers="__import__('os').getpid()")
    with pytest.raises(scaling.ScaleError, match="less than 1"):
        resolve(workers="cpus - 1")


def test_cpu_counts_take_the_lowest_free_cpus():
    profile = resolve(server_cpus=2, client_cpus=1)
    assert profile["server_cpus"] == [0, 1] and profile["client_cpus"] == [2]
    profile = resolve(server_cpus=2, client_cpus=[0])
    assert profile["server_cpus"] == [1, 2] and profile["client_cpus"] == [0]
    assert profile["scaling"]["scaled"] is False


def test_a_profile_bigger_than_the_host_is_refused_with_what_is_missing():
    with pytest.raises(scaling.ScaleError) as caught:
        resolve(host=[0, 1], server_cpus=8, client_cpus=4)
    assert "needs 8 server + 4 client CPUs" in str(caught.value)
    assert "this host has 2" in str(caught.value)
    with pytest.raises(scaling.ScaleError, match="memory"):
        resolve(memory=2 * 1024**3, memory_limit="4G")


def test_scale_down_keeps_the_split_and_records_it():
    profile = resolve(
        host=[0, 1], server_cpus=8, client_cpus=4, memory_limit="4G", memory=2**31, workers="2*cpus", scale_down=True
    )
    assert profile["server_cpus"] == [0] and profile["client_cpus"] == [1]
    assert profile["workers"] == 2
    assert profile["memory_limit"] == 2**31
    record = profile["scaling"]
    assert record["scaled"] is True
    assert record["asked"]["server_cpus"] == 8 and record["asked"]["workers"] == "2*cpus"
    assert any("scaled to 1 + 1" in note for note in record["notes"])
    six = resolve(host=list(range(6)), server_cpus=8, client_cpus=4, scale_down=True)
    assert len(six["server_cpus"]) == 4 and len(six["client_cpus"]) == 2


def test_command_line_numbers_become_numbers():
    config = copy.deepcopy(SHIPPED)
    config.update(concurrency=["10", "100"], repeats="2", duration="2.0")
    cfg.validate(config)
    assert config["concurrency"] == [10, 100] and config["repeats"] == 2 and config["duration"] == 2.0


def test_parse_size():
    assert scaling.parse_size("512M") == 512 * 1024**2
    assert scaling.parse_size("1.5GiB") == int(1.5 * 1024**3)
    assert scaling.parse_size(None) is None
    with pytest.raises(ValueError):
        scaling.parse_size("lots")


def test_snakemake_stops_before_any_job(tmp_path):
    """The real CLI: a bad override exits non-zero with the key path, no job runs."""
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--config", "repeats=0", f"results={tmp_path}/r"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "config error at repeats" in done.stderr
    assert not Path(tmp_path, "r").exists()


def test_a_program_is_found_by_its_set_path_then_program_dirs_then_path(tmp_path):
    from serverbench.host.runenv import resolve_program

    built = tmp_path / "unit" / "sbin"
    built.mkdir(parents=True)
    (built / "unitd").write_text("#!/bin/sh\n")
    (built / "unitd").chmod(0o755)
    (built / "not-executable").write_text("")
    config = {"programs": {"unitd": None}, "program_dirs": [str(tmp_path / "missing"), str(built)]}
    argv = ["unitd", "--no-daemon"]
    assert resolve_program(config, argv) == [str(built / "unitd"), "--no-daemon"]
    # An explicit path wins over the built one.
    assert resolve_program({**config, "programs": {"unitd": "/usr/sbin/unitd"}}, argv)[0] == "/usr/sbin/unitd"
    # Nothing built: the bare name, for PATH (and a skipped cell naming it when absent).
    assert resolve_program({"program_dirs": [str(tmp_path / "missing")]}, argv) == argv
    assert resolve_program(config, ["not-executable"]) == ["not-executable"]
    assert resolve_program(config, ["/bin/true"]) == ["/bin/true"]


def test_a_runs_seed_is_drawn_once_and_kept_in_its_results(tmp_path):
    """A resumed run (or an executor parsing the workflow per job) keeps the first parse's seed;
    another results directory draws its own; a given seed wins and writes nothing."""
    config = {"results": str(tmp_path / "a"), "seed": None}
    first = matrix.kept_seed(dict(config))
    assert matrix.kept_seed(dict(config)) == first == int((tmp_path / "a" / matrix.SEED_FILE).read_text())
    others = {matrix.kept_seed({"results": str(tmp_path / f"b{n}"), "seed": None}) for n in range(5)}
    assert len(others | {first}) > 1
    assert matrix.kept_seed({"results": str(tmp_path / "c"), "seed": 7}) == 7 and not (tmp_path / "c").exists()


def test_work_counted_for_the_workloads_named():
    """`work` as a list: the work lens counts those workloads only (a job per server each)."""
    grid = matrix.Matrix(cfg.validate(broken(lambda c: c.update(profile="apps", work=["fortunes"]))))
    counted = {(c.profile, c.workload) for c in grid.cells if grid.profiles[c.profile].counts_work(c.workload)}
    assert {workload for _, workload in counted} == {"fortunes"}
    assert {profile for profile, _ in counted} == {"apps-flask", "apps-django", "apps-dancer2", "apps-mojolicious"}
    shipped = matrix.Matrix(cfg.validate(broken(lambda c: c.update(profile=["default", "apps"]))))
    assert shipped.profiles["default"].counts_work("hello")
    assert not shipped.profiles["apps-flask"].counts_work("fortunes")
