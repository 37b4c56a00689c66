"""serverbench's terminal for a run (``logger: [serverbench]`` in profiles/default/config.yaml):
Snakemake's own lines, written as its default handler writes them, and after each finished job
one line of progress — the jobs done of the total (kept right as rounds are added), the job
that just finished, and the estimated end: each job still to run at the mean time this run's
finished jobs of its rule took (the mean of every finished job where none of its rule has).

Read from the events' fields, never from text: RUN_INFO's jobs per rule, JOB_INFO's rule,
wildcards and jobid, JOB_FINISHED's jobid, PROGRESS's done and total. A Snakemake logger plugin
(snakemake-interface-logger-plugins), found on the path as every plugin is, by its module name.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from logging import LogRecord

from snakemake.logging import ColorizingTextHandler
from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

# Rows of Snakemake's job counts that are not rules.
NOT_RULES = {"total"}


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


@dataclass
class Progress:
    """What the run has done and how long the rest will take, from the events seen so far."""

    clock: Callable[[], float] = time.time
    planned: Counter = field(default_factory=Counter)  # jobs per rule, as the run planned them
    finished: Counter = field(default_factory=Counter)
    seconds: dict[str, list[float]] = field(default_factory=dict)  # each finished job's time, by rule
    running: dict[int, tuple[str, str, float]] = field(default_factory=dict)  # jobid: rule, what, started
    last: str | None = None

    def planned_from(self, stats: dict) -> None:
        self.planned = Counter({rule: int(count) for rule, count in stats.items() if rule not in NOT_RULES})

    def started(self, jobid: int, rule: str, wildcards: dict | None) -> None:
        what = ", ".join(str(value) for value in (wildcards or {}).values())
        self.running[jobid] = (rule, what, self.clock())

    def ended(self, jobid: int) -> None:
        if jobid not in self.running:
            return
        rule, what, began = self.running.pop(jobid)
        took = self.clock() - began
        self.finished[rule] += 1
        self.seconds.setdefault(rule, []).append(took)
        self.last = f"{rule}{f' ({what})' if what else ''} in {duration(took)}"

    def seconds_left(self, done: int, total: int) -> float | None:
        """The jobs still to run, each at its rule's mean so far (every rule's where it has none);
        jobs added after the plan (rounds a precision checkpoint adds) at the mean of all."""
        every = [took for times in self.seconds.values() for took in times]
        if not every:
            return None
        overall = statistics.fmean(every)
        left = {rule: max(0, count - self.finished[rule]) for rule, count in self.planned.items()}
        added = max(0, (total - done) - sum(left.values()))
        return (
            sum(n * statistics.fmean(self.seconds.get(rule) or [overall]) for rule, n in left.items()) + added * overall
        )

    def line(self, done: int, total: int) -> str:
        left = self.seconds_left(done, total)
        just = f" · finished {self.last}" if self.last else ""
        if left is None:
            return f"serverbench: {done} of {total} jobs done{just}"
        ends = time.strftime("%H:%M", time.localtime(self.clock() + left))
        return f"serverbench: {done} of {total} jobs done{just} · about {duration(left)} left, ends about {ends}"

    def observe(self, record: LogRecord) -> str | None:
        """The progress line a record calls for, if any (after each finished job's PROGRESS)."""
        event = getattr(record, "event", None)
        if event == LogEvent.RUN_INFO:
            self.planned_from(getattr(record, "stats", {}) or {})
        elif event == LogEvent.JOB_INFO:
            self.started(record.jobid, record.rule_name, getattr(record, "wildcards", None))
        elif event == LogEvent.JOB_FINISHED:
            self.ended(record.job_id)
        elif event == LogEvent.PROGRESS and record.done:
            return self.line(record.done, record.total)
        return None


class LogHandler(LogHandlerBase):
    """Snakemake's default lines (its own filter and formatter, attached to this handler), then ours."""

    def __post_init__(self) -> None:
        stream = sys.stdout if self.common_settings.stdout else sys.stderr
        self.text = ColorizingTextHandler(nocolor=self.common_settings.nocolor, stream=stream)
        self.progress = Progress()

    def emit(self, record: LogRecord) -> None:
        if self.text.formatter is not self.formatter:
            self.text.setFormatter(self.formatter)
        self.text.emit(record)
        try:
            line = self.progress.observe(record)
        except Exception as exc:  # the run goes on whatever its progress line does
            line = f"serverbench: no progress line ({type(exc).__name__}: {exc})"
        if line:
            self.text.stream.write(line + "\n")
            self.text.flush()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False

    @property
    def has_formatter(self) -> bool:
        return False

    @property
    def needs_rulegraph(self) -> bool:
        return False
