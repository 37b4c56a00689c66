"""The run's progress line (workflow/snakemake_logger_plugin_serverbench): jobs done of the
total, the job that finished, and the time left from this run's own job times per rule, on
events as Snakemake sends them (their fields, on a clock the test moves); the line in a real
run is tests/test_lens.py's."""

import logging

import pytest
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry
from snakemake_logger_plugin_serverbench import LogHandler, Progress

pytestmark = pytest.mark.quick


def event(kind: LogEvent, **fields) -> logging.LogRecord:
    record = logging.LogRecord("snakemake", logging.INFO, __file__, 0, None, None, None)
    record.__dict__.update(event=kind, **fields)
    return record


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_time_left_is_each_rules_own_mean_and_rounds_added_count_at_the_mean_of_all():
    clock = Clock()
    progress = Progress(clock=clock)
    assert progress.observe(event(LogEvent.RUN_INFO, stats={"bench": 4, "collect": 1, "total": 5})) is None
    progress.observe(event(LogEvent.JOB_INFO, jobid=1, rule_name="bench", wildcards={"server": "gunicorn"}))
    clock.now += 10
    progress.observe(event(LogEvent.JOB_FINISHED, job_id=1))
    # 3 cells at 10 s each, the collect at the only mean there is (10 s): 40 s.
    line = progress.observe(event(LogEvent.PROGRESS, done=1, total=5))
    assert line.startswith("serverbench: 1 of 5 jobs done · finished bench (gunicorn) in 10 s · about 40 s left")
    progress.observe(event(LogEvent.JOB_INFO, jobid=2, rule_name="collect", wildcards={}))
    clock.now += 2
    progress.observe(event(LogEvent.JOB_FINISHED, job_id=2))
    assert progress.seconds_left(2, 5) == pytest.approx(30)  # 3 cells at 10 s; the collect done
    # A checkpoint added two rounds of two cells: 4 jobs no plan counted, at the mean of all (6 s).
    assert progress.seconds_left(2, 9) == pytest.approx(30 + 4 * 6)
    assert "finished collect in 2 s" in progress.line(2, 9)


def test_no_time_is_guessed_before_a_job_has_finished_and_events_without_a_job_are_ignored():
    progress = Progress(clock=Clock())
    assert progress.line(0, 3) == "serverbench: 0 of 3 jobs done"
    progress.ended(99)  # a job it never saw start
    assert progress.finished == {} and progress.last is None


def test_snakemake_finds_the_plugin_by_its_module_name():
    plugin = LoggerPluginRegistry().get_plugin("serverbench")
    assert plugin.log_handler is LogHandler
