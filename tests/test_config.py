"""Config validation: every bad config stops with one message naming the key path."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from serverbench import REPO_ROOT
from serverbench import config as cfg

SHIPPED = yaml.safe_load((REPO_ROOT / "config.yaml").read_text())


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
    "wrong type": (lambda c: c["profiles"]["default"].update(workers="two"), "profiles.default.workers", "integer"),
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
    "repeats 0": (lambda c: c["profiles"]["default"].update(repeats=0), "profiles.default.repeats", "minimum"),
    "unparsable memory limit": (
        lambda c: c["profiles"]["default"].update(memory_limit="lots"),
        "profiles.default.memory_limit",
        "",
    ),
    "empty server list": (lambda c: c["profiles"]["default"].update(servers=[]), "profiles.default.servers", ""),
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
    "relative program path": (lambda c: c.update(programs={"unitd": "unitd"}), "programs.unitd", ""),
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
    cells = cfg.cells(cfg.validate(config))
    assert len(cells) == 2 * 1 * 2 * 3
    assert len({c.relpath for c in cells}) == len(cells)
    assert cells[0].relpath == "default/wrk/gunicorn/c10/r1"


def test_command_line_numbers_become_numbers():
    config = copy.deepcopy(SHIPPED)
    config.update(concurrency=["10", "100"], repeats="2", duration="1.5")
    cfg.validate(config)
    assert config["concurrency"] == [10, 100] and config["repeats"] == 2 and config["duration"] == 1.5


def test_parse_size():
    assert cfg.parse_size("512M") == 512 * 1024**2
    assert cfg.parse_size("1.5GiB") == int(1.5 * 1024**3)
    assert cfg.parse_size(None) is None
    with pytest.raises(ValueError):
        cfg.parse_size("lots")


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
